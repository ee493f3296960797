// The unit tests of the row codecs and the migration decisions, for `pnpm mutate` (see
// stryker.config.mjs). No global setup: none of these spawn a process, so no build is needed.
import { tidemarkVitest } from '@tidemark/vitest-config';

const base = tidemarkVitest();

// Set, not merged: mergeConfig would append to the preset's include of every test file.
export default {
  ...base,
  test: {
    ...base.test,
    include: ['test/rows.test.ts', 'test/migration-plan.test.ts', 'test/damaged-row-reasons.test.ts'],
  },
};
