// Shared vitest preset. Workspace packages export a "@tidemark/source" condition that points at
// their TypeScript sources, so tests run against the code as written, without a stale build.
import { defineConfig, mergeConfig } from 'vitest/config';

const conditions = ['@tidemark/source', 'import', 'module', 'node', 'default'];

/** @param {import('vitest/config').UserConfig} [overrides] */
export function tidemarkVitest(overrides = {}) {
  return mergeConfig(
    defineConfig({
      resolve: { conditions },
      ssr: { resolve: { conditions } },
      test: {
        include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
        environment: 'node',
        testTimeout: 30_000,
        hookTimeout: 30_000,
        pool: 'forks',
        allowOnly: false,
      },
    }),
    overrides,
  );
}
