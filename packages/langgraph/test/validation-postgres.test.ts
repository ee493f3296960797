// LangGraph's checkpoint validation suite on the PostgreSQL backend (skipped with a message when
// no server answers, except with CI=true).
import { it } from 'vitest';
import { postgres, postgresAvailable } from './backends.js';
import { validateOn } from './validation.js';

if (await postgresAvailable()) validateOn(postgres);
else it.skip('PostgreSQL server not reachable (see the warning above)', () => undefined);
