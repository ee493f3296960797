// The storage-fault harness over sealed stores: the JSONL and SQLite drivers of the backends, with
// every store the harness opens (in its sweeps and in the child processes of its real faults)
// wrapped by `sealStore`, so its invariants (no acknowledged event lost, typed errors, no false
// absence, still writable) are checked on opened events. Keys: TIDEMARK_KEYS, or a fixed
// test key (the stores are the harness's own temporary data).
//
//   tidemark harness --quick --driver @tidemark/sealed/harness/jsonl
//   tidemark harness --quick --driver @tidemark/sealed/harness/sqlite
//
// Engine checks that read the backend's raw bytes or settings (SQLite's power loss and settings
// sweeps) are the backend's own, unchanged by sealing; they run in the backend's harness, not here.
import { openJsonlStore } from '@tidemark/jsonl';
import jsonlDriver from '@tidemark/jsonl/harness';
import { openSqliteStore } from '@tidemark/sqlite';
import sqliteDriver from '@tidemark/sqlite/harness';
import { Keyring, sealStore } from '../dist/index.js';

const keys = () =>
  Keyring.fromEnv() ??
  Keyring.parse(`harness:${Buffer.alloc(32, 0x5e).toString('base64')}`, 'the harness key');

/** Factories the real-fault child processes call (module and factory name in `real`). */
export async function openSealedJsonlStore(options) {
  return sealStore(await openJsonlStore(options), { keys: keys() });
}
export async function openSealedSqliteStore(options) {
  return sealStore(await openSqliteStore(options), { keys: keys() });
}

/** `@tidemark/jsonl`'s driver, sealed. */
export function sealedJsonlDriver(options) {
  const base = jsonlDriver(options);
  const keyring = keys();
  return {
    ...base,
    name: 'sealed-jsonl',
    open: async (target) => sealStore(await base.open(target), { keys: keyring }),
    real: base.real && { ...base.real, module: import.meta.url, factory: 'openSealedJsonlStore' },
  };
}

/** `@tidemark/sqlite`'s driver, sealed. */
export function sealedSqliteDriver(options) {
  const base = sqliteDriver(options);
  const keyring = keys();
  const { engineChecks: _raw, ...rest } = base;
  return {
    ...rest,
    name: 'sealed-sqlite',
    async create(createOptions) {
      const storage = await base.create(createOptions);
      return { ...storage, open: async (inject) => sealStore(await storage.open(inject), { keys: keyring }) };
    },
    real: base.real && { ...base.real, module: import.meta.url, factory: 'openSealedSqliteStore' },
  };
}
