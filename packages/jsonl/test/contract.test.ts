import { rmSync } from 'node:fs';
import { runStoreContract } from '@tidemark/contract';
import type { SessionStore, StoreOptions } from '@tidemark/core';
import { JsonlStore, openJsonlStore } from '../src/index.js';
import { tempDir } from './helpers.js';

// The whole conformance suite over real files: each `open` gets a fresh root; `reopen` opens
// another store over the same root (a restart, or a second live instance as another process).
const roots: string[] = [];
const optionsOf = new WeakMap<SessionStore, StoreOptions | undefined>();

runStoreContract({
  name: 'jsonl',
  async open(options) {
    const root = tempDir('tidemark-contract-');
    roots.push(root);
    const store = await openJsonlStore({ ...options, root });
    optionsOf.set(store, options);
    return store;
  },
  async reopen(store, options) {
    if (!(store instanceof JsonlStore)) throw new Error('reopen of a store this driver did not open');
    const next = await openJsonlStore({ ...(options ?? optionsOf.get(store)), root: store.root });
    optionsOf.set(next, options ?? optionsOf.get(store));
    return next;
  },
  async cleanup() {
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  },
});
