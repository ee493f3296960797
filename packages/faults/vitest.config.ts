import { tidemarkVitest } from '@tidemark/vitest-config';

const config = tidemarkVitest();
// Vitest hands ssr.resolve.conditions to the test processes as Node `--conditions`. With `import`
// among them, pg's CommonJS `require('pg-pool')` loads pg-pool's ESM build and `new Pool` fails
// ("Class extends value [object Module]"); Vite adds import/require per request on its own.
if (config.ssr?.resolve !== undefined)
  config.ssr.resolve.conditions = ['@tidemark/source', 'module', 'node', 'default'];

export default config;
