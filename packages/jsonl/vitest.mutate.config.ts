// The fast tests of the line format and the scanner, for `pnpm mutate` (see stryker.config.mjs).
// No global setup: none of these spawn a process, so no build of dist is needed. The property
// tests and the store-level recovery tests are left out: the test files build logs while they are
// collected, which makes most mutants "static" (run against the whole suite), and those files
// would multiply the run's time several times over (docs/mutation.md).
import { tidemarkVitest } from '@tidemark/vitest-config';

const base = tidemarkVitest();

// Set, not merged: mergeConfig would append to the preset's include of every test file.
export default {
  ...base,
  test: {
    ...base.test,
    include: [
      'test/scan.test.ts',
      'test/scan-edges.test.ts',
      'test/line-decoding.test.ts',
      'test/batch-encoding.test.ts',
      'test/fast-line-path.test.ts',
      'test/batch-decode.test.ts',
      'test/mark.test.ts',
      'test/tail-cut.test.ts',
      'test/verify.test.ts',
    ],
  },
};
