// Opening a store from its address. The backend packages are loaded lazily with a computed
// specifier, so that the CLI builds and runs when one of them is missing or not yet built: that
// address then fails with UNAVAILABLE instead of the whole CLI failing to start.
import type { SessionStore, StoreOptions } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import type { StoreAddress } from './address.js';
import { CliError } from './exit-codes.js';
import { jsonlMaintenance, sqliteMaintenance } from './maintenance.js';
import type { Maintenance } from './maintenance-types.js';

/** A store opened by the CLI, with what it knows about checking and repairing it. */
export interface Backend extends Maintenance {
  address: StoreAddress;
  store: SessionStore;
}

async function importOptional(specifier: string, address: string): Promise<Record<string, unknown>> {
  try {
    return (await import(specifier)) as Record<string, unknown>;
  } catch (error) {
    const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new CliError(
      'UNAVAILABLE',
      `backend for ${address} is not available in this installation (${specifier}: ${detail})`,
    );
  }
}

function factory<T>(
  module: Record<string, unknown>,
  name: string,
  address: string,
): (options: T) => Promise<SessionStore> {
  const fn = module[name];
  if (typeof fn !== 'function')
    throw new CliError('UNAVAILABLE', `backend for ${address} is not available: ${name} is missing`);
  return fn as (options: T) => Promise<SessionStore>;
}

/** Opens the store at `address`. */
export async function openBackend(address: StoreAddress, options: StoreOptions = {}): Promise<Backend> {
  switch (address.kind) {
    case 'memory':
      return { address, store: await openMemoryStore(options) };
    case 'jsonl': {
      const module = await importOptional('@tidemark/jsonl', address.text);
      const open = factory<{ root: string } & StoreOptions>(module, 'openJsonlStore', address.text);
      const store = await open({ root: address.dir, ...options });
      return { address, store, ...jsonlMaintenance(module, address.dir, store) };
    }
    case 'sqlite': {
      const module = await importOptional('@tidemark/sqlite', address.text);
      const open = factory<{ path: string } & StoreOptions>(module, 'openSqliteStore', address.text);
      const store = await open({ path: address.file, ...options });
      return { address, store, ...sqliteMaintenance(module, address.file, store, options.boundaryTypes) };
    }
    case 'postgres':
      throw new CliError(
        'UNAVAILABLE',
        `backend for ${address.text} is not available in this installation (@tidemark/postgres is not shipped yet)`,
      );
  }
}
