// The tidemark conformance suite over the json-dir store on the real disk: each `open` gets a
// fresh directory; `reopen` opens another store over the same one (a restart, or a second live
// instance as another process would be). The driver passes the options on untouched, so a
// misspelt option reaches the factory (and must be INVALID).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runStoreContract } from '@tidemark/contract';
import { openJsonDirStore } from '../src/index.js';

/** @type {string[]} */
const dirs = [];
/** @type {WeakMap<object, { root: string, options: object | undefined }>} */
const opened = new WeakMap();

/** @param {string} root @param {object | undefined} options */
async function openAt(root, options) {
  const store = await openJsonDirStore({ ...options, root });
  opened.set(store, { root, options });
  return store;
}

runStoreContract(
  {
    name: 'json-dir',
    open(options) {
      const root = mkdtempSync(join(tmpdir(), 'json-dir-contract-'));
      dirs.push(root);
      return openAt(root, options);
    },
    reopen(store, options) {
      const found = opened.get(store);
      if (found === undefined) throw new Error('reopen of a store this driver did not open');
      return openAt(found.root, options ?? found.options);
    },
    async cleanup() {
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  },
  { modelRuns: 20 },
);
