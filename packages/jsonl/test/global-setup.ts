// Child-process tests run the store from `dist`, so core and jsonl must be built.
// Only what is missing or older than its sources is built (buildStalePackages says why).
import { buildStalePackages } from '@tidemark/vitest-config';

export default function setup(): void {
  buildStalePackages(import.meta.url, ['../../core', '..']);
}
