import { tidemarkVitest } from '@tidemark/vitest-config';

// Each test runs the built binary many times (the migrate round trip some forty times); on a
// loaded two-core machine one run can take seconds, and a CI dry run timed out at the preset's
// 30 s. The timeout guards against a hang only. Four files at a time: this package starts last
// (it depends on every other package's build) and ends `pnpm test`; the quick harness over every
// backend (harness-quick.test.ts, 4 minutes in CI) and the rekey kills (3 minutes) each hold a
// worker for their whole run, and with three workers the other fifteen files, one after another,
// were the last two minutes of a 12-minute CI run, with the cores half idle.
const config = tidemarkVitest({
  test: { globalSetup: ['test/global-setup.ts'], testTimeout: 180_000, maxWorkers: 4 },
});
// Vitest hands ssr.resolve.conditions to Node as --conditions. The shared preset's 'import' would
// make pg's require('pg-pool') load pg-pool's ESM build (a namespace, not the Pool class), which
// the PostgreSQL tests' own connection needs; workspace sources still resolve.
if (config.ssr?.resolve !== undefined) config.ssr.resolve.conditions = ['@tidemark/source', 'node'];
export default config;
