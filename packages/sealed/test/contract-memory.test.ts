import { runStoreContract } from '@tidemark/contract';
import type { SessionStore, StoreOptions } from '@tidemark/core';
import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import { sealedDriver } from './driver.js';

// The whole conformance suite over a sealed memory store.
const volumes = new WeakMap<SessionStore, { volume: MemoryVolume; options: StoreOptions | undefined }>();
const opened = async (volume: MemoryVolume, options: StoreOptions | undefined) => {
  const store = await openMemoryStore({ ...options, volume });
  volumes.set(store, { volume, options });
  return store;
};

runStoreContract(
  sealedDriver({
    name: 'memory',
    open: (options) => opened(new MemoryVolume(), options),
    async reopen(store, options) {
      const found = volumes.get(store);
      if (found === undefined) throw new Error('reopen of a store this driver did not open');
      return opened(found.volume, options ?? found.options);
    },
    async cleanup() {},
  }),
);
