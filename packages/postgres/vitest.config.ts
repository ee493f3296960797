import { tidemarkVitest } from '@tidemark/vitest-config';

export default tidemarkVitest({ test: { globalSetup: ['test/global-setup.ts'] } });
