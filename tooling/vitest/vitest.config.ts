import { tidemarkVitest } from './index.js';

export default tidemarkVitest();
