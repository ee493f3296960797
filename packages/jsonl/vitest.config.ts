import { tidemarkVitest } from '@tidemark/vitest-config';

// Two files at a time: the mutation tests (split in three files by the sweep their variants
// belong to) are the longest of the whole run, and one worker, vitest's default on two cores,
// ran them one after another at the end of CI.
export default tidemarkVitest({ test: { globalSetup: ['test/global-setup.ts'], maxWorkers: 2 } });
