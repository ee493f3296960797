// Mutation testing of the row codecs and the schema decisions (the pure half of schema.ts);
// `pnpm mutate`.
import { strykerPreset } from '../../tooling/stryker.mjs';

export default strykerPreset({ mutate: ['src/rows.ts', 'src/migration-plan.ts'] });
