import { runStoreContract } from '@tidemark/contract';
import { afterAll, describe, it } from 'vitest';
import { endAdmin, jsonlDriver, postgresDriver, serverAvailable, sqliteDriver } from './backends.js';
import { sealedDriver } from './driver.js';

// The conformance suite over sealed JSONL, SQLite and PostgreSQL stores. The model-based test
// runs fewer sequences than the backends' own suites do (the backends run it in full themselves;
// here it checks the sealing layer over each); TIDEMARK_FULL=1 runs the default count.
const full = process.env.TIDEMARK_FULL === '1';
const modelRuns = full ? 50 : 10;

runStoreContract(sealedDriver(jsonlDriver()), { modelRuns });
runStoreContract(sealedDriver(sqliteDriver()), { modelRuns });

if (await serverAvailable()) {
  runStoreContract(sealedDriver(postgresDriver()), { modelRuns });
} else {
  describe('tidemark store contract: sealed postgres', () => {
    it.skip('needs a PostgreSQL server (see the message above)', () => undefined);
  });
}
afterAll(endAdmin);
