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
        // Two files at a time in every package. Vitest's default on two cores is one, so each
        // package ran its files one after another, and most of their time is waiting (fsyncs,
        // child processes starting, lock hand-overs): sqlite's tests took 190 s for 50 s of CPU.
        // Overlapping two files keeps `pnpm test` under its 12-minute budget on two cores.
        maxWorkers: 2,
        allowOnly: false,
      },
    }),
    overrides,
  );
}
