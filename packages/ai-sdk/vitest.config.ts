import { tidemarkVitest } from '@tidemark/vitest-config';

const config = tidemarkVitest({ test: { globalSetup: ['test/global-setup.ts'] } });
// As in @tidemark/postgres: externalized packages get Node's own conditions, or pg's
// require('pg-pool') would load pg-pool's ESM build; workspace sources still resolve.
if (config.ssr?.resolve !== undefined) config.ssr.resolve.conditions = ['@tidemark/source', 'node'];
export default config;
