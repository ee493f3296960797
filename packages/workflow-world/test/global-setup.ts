// Child-process tests (world-testing's server, the crash and host children) run plain Node on the
// built packages, so core, the backends and this package must be built.
// Only what is missing or older than its sources is built (buildStalePackages says why).
import { buildStalePackages } from '@tidemark/vitest-config';

export default function setup(): void {
  buildStalePackages(import.meta.url, ['../../core', '../../jsonl', '../../sqlite', '../../postgres', '..']);
}
