import { tidemarkVitest } from '@tidemark/vitest-config';

const config = tidemarkVitest({
  test: {
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/node20.ts'],
    // world-testing starts a server per test, and the crash and host tests start processes: one
    // file at a time keeps them off each other's ports and cores.
    fileParallelism: false,
    // The workflow runtime keeps module-level state (its World and queue): the crash tests' runs
    // failed with 500s after another file had used it in the same worker.
    isolate: true,
    testTimeout: 120_000,
  },
});
// As in @tidemark/postgres: externalized packages get Node's own conditions, or pg's
// require('pg-pool') would load pg-pool's ESM build; workspace sources still resolve.
if (config.ssr?.resolve !== undefined) config.ssr.resolve.conditions = ['@tidemark/source', 'node'];
export default config;
