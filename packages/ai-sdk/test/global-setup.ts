// The crash test and the example run plain Node on built packages, so core, jsonl and this
// package must be built.
// Only what is missing or older than its sources is built (buildStalePackages says why).
import { buildStalePackages } from '@tidemark/vitest-config';

export default function setup(): void {
  buildStalePackages(import.meta.url, ['../../core', '../../jsonl', '..']);
}
