import { tidemarkVitest } from '@tidemark/vitest-config';

export default tidemarkVitest({ test: { testTimeout: 180_000 } });
