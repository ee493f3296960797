// The child-process test runs plain Node on the built packages, so core, jsonl, sqlite and this
// package must be built.
// Only what is missing or older than its sources is built (buildStalePackages says why).
import { buildStalePackages } from '@tidemark/vitest-config';

export default function setup(): void {
  buildStalePackages(import.meta.url, ['../../core', '../../jsonl', '../../sqlite', '..']);
}
