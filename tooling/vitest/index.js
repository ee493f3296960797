// Shared vitest preset. Workspace packages export a "@tidemark/source" condition that points at
// their TypeScript sources, so tests run against the code as written, without a stale build.
import { defineConfig, mergeConfig } from 'vitest/config';

export { buildStalePackages, isStale } from './build-stale.js';

const conditions = ['@tidemark/source', 'import', 'module', 'node', 'default'];
// Vitest hands ssr.resolve.conditions to Node as --conditions for externalized dependencies, where
// they apply to require() too: 'import' (or 'module') there makes a CommonJS package such as pg load
// the ESM build of what it requires (pg-pool: a namespace, not the Pool class). Vite adds import or
// require by how a module is imported, and 'default' always matches, so the server side names only
// the workspace source condition and Node's own.
const serverConditions = ['@tidemark/source', 'node'];

/** @param {import('vitest/config').UserConfig} [overrides] */
export function tidemarkVitest(overrides = {}) {
  return mergeConfig(
    defineConfig({
      resolve: { conditions },
      ssr: { resolve: { conditions: serverConditions } },
      test: {
        include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
        environment: 'node',
        testTimeout: 30_000,
        hookTimeout: 30_000,
        pool: 'forks',
        // Vitest's default worker count (one on two cores): turbo already runs up to ten packages
        // at once, and `pnpm test` is CPU-bound on two cores (1,993 CPU-seconds in a 17.6-minute
        // run, idle only while installing). Two workers per package doubled the processes (the
        // load reached 20 to 24), and timing-sensitive upstream suites (world-testing, the
        // browser tests) timed out. The two longest packages ask for more (jsonl two, cli four).
        allowOnly: false,
        // Test files of a worker share its module cache: with a fresh module graph per file, each
        // of the run's 240 files imported core, its backend and often a whole agent framework
        // again (core's tests: 10.7 → 3.6 CPU-seconds, faults' 9.3 → 3.4, sealed's 19.9 → 11.7).
        // Every file opens its own stores under its own temp dirs and schemas; a package whose
        // files share module state opts back in with `isolate: true` and says why.
        isolate: false,
      },
    }),
    overrides,
  );
}
