import { tidemarkVitest } from '@tidemark/vitest-config';

// Packing, npm install and two harness runs: minutes on a loaded 2-core machine; the timeouts
// only guard against a hang.
export default tidemarkVitest({ test: { testTimeout: 900_000, hookTimeout: 600_000 } });
