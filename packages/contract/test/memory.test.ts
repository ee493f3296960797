import type { SessionStore, StoreOptions } from '@tidemark/core';
import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import { type ContractDriver, runStoreContract } from '../src/index.js';

// Each store remembers its volume and options, so reopen can share the "disk" like a restart or a
// second process would.
const volumes = new WeakMap<SessionStore, { volume: MemoryVolume; options: StoreOptions | undefined }>();

const memoryDriver: ContractDriver = {
  name: 'memory',
  async open(options) {
    const volume = new MemoryVolume();
    const store = await openMemoryStore({ ...options, volume });
    volumes.set(store, { volume, options });
    return store;
  },
  async reopen(store, options) {
    const found = volumes.get(store);
    if (found === undefined) throw new Error('reopen of a store this driver did not open');
    const next = await openMemoryStore({ ...(options ?? found.options), volume: found.volume });
    volumes.set(next, { volume: found.volume, options: options ?? found.options });
    return next;
  },
  async cleanup() {
    // Volumes are garbage once unreferenced.
  },
};

runStoreContract(memoryDriver);
