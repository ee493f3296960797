// Mutation testing of core's pure rules (validation, seq rules, paging, options); `pnpm mutate`.
import { strykerPreset } from '../../tooling/stryker.mjs';

export default strykerPreset({
  mutate: [
    'src/json.ts',
    'src/json-walk.ts',
    'src/event.ts',
    'src/ids.ts',
    'src/session.ts',
    'src/paging.ts',
    'src/options.ts',
    'src/reservations.ts',
    'src/boundary.ts',
    'src/iso-time.ts',
  ],
});
