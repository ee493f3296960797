import { runStoreContract } from '@tidemark/contract';
import type { SessionStore, StoreOptions } from '@tidemark/core';
import { afterAll, describe, it } from 'vitest';
import { openPostgresStore } from '../src/index.js';
import { dropSchemas, endAdmin, PG_URL, schemaName, serverAvailable } from './server.js';

// A fresh schema per `open`; `reopen` opens another store (its own pool) on the same schema, as
// another host would. Cleanup drops every schema opened.
const available = await serverAvailable();
const schemaOf = new WeakMap<SessionStore, string>();
const created = new Set<string>();

if (available) {
  runStoreContract(
    {
      name: 'postgres',
      async open(options?: StoreOptions) {
        const schema = schemaName('contract');
        created.add(schema);
        const store = await openPostgresStore({ ...options, connectionString: PG_URL, schema, poolSize: 3 });
        schemaOf.set(store, schema);
        return store;
      },
      async reopen(store: SessionStore, options?: StoreOptions) {
        const schema = schemaOf.get(store);
        if (schema === undefined) throw new Error('reopen: store was not opened by this driver');
        const other = await openPostgresStore({ ...options, connectionString: PG_URL, schema, poolSize: 3 });
        schemaOf.set(other, schema);
        return other;
      },
      async cleanup() {
        await dropSchemas(created);
        created.clear();
      },
    },
    { modelRuns: 25 },
  );
  afterAll(endAdmin);
} else {
  describe('tidemark store contract: postgres', () => {
    it.skip('needs a PostgreSQL server (see the message above)', () => undefined);
  });
}
