import { tidemarkVitest } from '@tidemark/vitest-config';

export default tidemarkVitest();
