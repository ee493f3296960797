// The fast tests of the line format and the scanner, for `pnpm mutate` (see stryker.config.mjs).
// No global setup: none of these spawn a process, so no build of dist is needed.
import { tidemarkVitest } from '@tidemark/vitest-config';

const base = tidemarkVitest();

// Set, not merged: mergeConfig would append to the preset's include of every test file.
export default {
  ...base,
  test: {
    ...base.test,
    include: [
      'test/scan.test.ts',
      'test/scan.property.test.ts',
      'test/mark.test.ts',
      'test/recovery.test.ts',
      'test/tail-cut.test.ts',
      'test/verify.test.ts',
      'test/hostile-files.test.ts',
    ],
  },
};
