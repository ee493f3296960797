// Opening a store from its address. The backend packages are loaded lazily with a computed
// specifier, so that the CLI builds and runs when one of them is missing or not yet built: that
// address then fails with UNAVAILABLE instead of the whole CLI failing to start.
import type { MaintainedStore, StoreOptions } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import type { StoreAddress } from './address.js';
import { CliError } from './exit-codes.js';

/** A store opened by the CLI: every backend's store offers the core maintenance interface. */
export interface Backend {
  address: StoreAddress;
  store: MaintainedStore;
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

/** The store factory `name` of the backend package `specifier`, loaded on first use. */
async function factory<T>(
  specifier: string,
  name: string,
  address: string,
): Promise<(options: T) => Promise<MaintainedStore>> {
  const fn = (await importOptional(specifier, address))[name];
  if (typeof fn !== 'function')
    throw new CliError('UNAVAILABLE', `backend for ${address} is not available: ${name} is missing`);
  return fn as (options: T) => Promise<MaintainedStore>;
}

/** Opens the store at `address`. */
export async function openBackend(address: StoreAddress, options: StoreOptions = {}): Promise<Backend> {
  switch (address.kind) {
    case 'memory':
      return { address, store: await openMemoryStore(options) };
    case 'jsonl': {
      const open = await factory<{ root: string } & StoreOptions>(
        '@tidemark/jsonl',
        'openJsonlStore',
        address.text,
      );
      return { address, store: await open({ root: address.dir, ...options }) };
    }
    case 'sqlite': {
      const open = await factory<{ path: string } & StoreOptions>(
        '@tidemark/sqlite',
        'openSqliteStore',
        address.text,
      );
      return { address, store: await open({ path: address.file, ...options }) };
    }
    case 'postgres': {
      const open = await factory<{ connectionString: string; schema?: string } & StoreOptions>(
        '@tidemark/postgres',
        'openPostgresStore',
        address.text,
      );
      const schema = address.schema;
      return {
        address,
        store: await open({
          connectionString: address.url,
          ...(schema !== undefined && { schema }),
          ...options,
        }),
      };
    }
  }
}
