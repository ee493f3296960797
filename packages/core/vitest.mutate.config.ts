// The fast unit tests of the modules `pnpm mutate` mutates (see stryker.config.mjs); the writer,
// resume and fork tests reach those rules only through slower store round trips.
import { tidemarkVitest } from '@tidemark/vitest-config';

const base = tidemarkVitest();

// Set, not merged: mergeConfig would append to the preset's include of every test file.
export default {
  ...base,
  test: {
    ...base.test,
    include: [
      'test/json.test.ts',
      'test/event.test.ts',
      'test/iso-time.test.ts',
      'test/session.test.ts',
      'test/paging.test.ts',
      'test/options.test.ts',
      'test/reservations.test.ts',
      'test/text.test.ts',
      'test/base-store.test.ts',
      'test/argument-validation.test.ts',
      'test/value-rules.test.ts',
    ],
  },
};
