import { tidemarkVitest } from '@tidemark/vitest-config';

// LangGraph's validation suite calls describe/it/beforeAll as globals.
// Isolated files: sealed-store.test.ts mocks ./backends.js and imports state-graph.test.ts again,
// which a shared module cache would hand back already evaluated (no tests).
const config = tidemarkVitest({
  test: { globals: true, globalSetup: ['test/global-setup.ts'], isolate: true },
});
// As in @tidemark/postgres: externalized CommonJS packages (pg, pg-pool) get Node's own
// conditions, so require('pg-pool') loads the Pool class; workspace sources still resolve.
if (config.ssr?.resolve !== undefined) config.ssr.resolve.conditions = ['@tidemark/source', 'node'];
export default config;
