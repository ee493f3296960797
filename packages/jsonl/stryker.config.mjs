// Mutation testing of the JSONL line format and the log scanner; `pnpm mutate`.
import { strykerPreset } from '../../tooling/stryker.mjs';

export default strykerPreset({
  mutate: ['src/format.ts', 'src/framing.ts', 'src/batch-decode.ts', 'src/scan.ts'],
});
