import type { ContractDriver } from '@tidemark/contract';
import type { SessionStore, StoreOptions } from '@tidemark/core';
import { type SealedStore, sealedEventBytes, sealStore } from '../src/index.js';
import { keyring } from './helpers.js';

/**
 * A contract driver of a sealed store over `inner`'s driver. The event limits of the options are
 * the sealed store's (they apply to plaintext); the inner store gets room for the sealed form.
 */
export function sealedDriver(inner: ContractDriver): ContractDriver {
  const innerOf = new WeakMap<SessionStore, SessionStore>();
  const wrap = (store: SessionStore, options: StoreOptions | undefined): SealedStore => {
    const limits = {
      ...(options?.maxDepth !== undefined && { maxDepth: options.maxDepth }),
      ...(options?.maxEventBytes !== undefined && { maxEventBytes: options.maxEventBytes }),
    };
    const sealed = sealStore(store, { keys: keyring, limits });
    innerOf.set(sealed, store);
    return sealed;
  };
  const innerOptions = (options: StoreOptions | undefined): StoreOptions | undefined => {
    if (options?.maxEventBytes === undefined) return options;
    return { ...options, maxEventBytes: sealedEventBytes(options.maxEventBytes) };
  };
  return {
    name: `sealed ${inner.name}`,
    async open(options) {
      return wrap(await inner.open(innerOptions(options)), options);
    },
    async reopen(store, options) {
      const found = innerOf.get(store);
      if (found === undefined) throw new Error('reopen of a store this driver did not open');
      return wrap(await inner.reopen(found, innerOptions(options)), options);
    },
    cleanup: () => inner.cleanup(),
  };
}
