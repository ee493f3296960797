import { tidemarkVitest } from '@tidemark/vitest-config';

const config = tidemarkVitest({ test: { globalSetup: ['test/global-setup.ts'] } });
// Vitest hands ssr.resolve.conditions to Node as --conditions. The shared preset's 'import' would
// make pg's require('pg-pool') load pg-pool's ESM build (a namespace, not the Pool class), so
// externalized packages get Node's own conditions here; workspace sources still resolve.
if (config.ssr?.resolve !== undefined) config.ssr.resolve.conditions = ['@tidemark/source', 'node'];
export default config;
