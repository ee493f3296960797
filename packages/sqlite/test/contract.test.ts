import { join } from 'node:path';
import { runStoreContract } from '@tidemark/contract';
import type { SessionStore, StoreOptions } from '@tidemark/core';
import { openSqliteStore } from '../src/index.js';
import { removeTempDirs, tempDir } from './helpers.js';

// A temp database per test; `reopen` opens another connection on the same file, as another
// process would.
const pathOf = new WeakMap<SessionStore, string>();

runStoreContract(
  {
    name: 'sqlite',
    async open(options?: StoreOptions) {
      const path = join(tempDir(), 'contract.db');
      const store = await openSqliteStore({ ...options, path });
      pathOf.set(store, path);
      return store;
    },
    async reopen(store: SessionStore, options?: StoreOptions) {
      const path = pathOf.get(store);
      if (path === undefined) throw new Error('reopen: store was not opened by this driver');
      const other = await openSqliteStore({ ...options, path });
      pathOf.set(other, path);
      return other;
    },
    async cleanup() {
      removeTempDirs();
    },
  },
  { modelRuns: 30 },
);
