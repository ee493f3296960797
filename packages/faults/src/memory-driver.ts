import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import type { EngineHarnessDriver } from './driver.js';

/**
 * The reference backend as a harness driver: faults are injected through its `beforeStorageStep`
 * hook, one step per read, write, list or delete. It has no files, so crash and real-disk rows are `n/a`.
 */
export function memoryDriver(): EngineHarnessDriver {
  return {
    name: 'memory',
    kind: 'engine',
    injectsSteps: true,
    durabilities: ['strict', 'relaxed'],
    async create(mode) {
      const volume = new MemoryVolume();
      // No durability given: none passed, as a user opens the store.
      const durability = mode?.durability === undefined ? {} : { durability: mode.durability };
      return {
        open: (inject) =>
          openMemoryStore(
            inject === undefined
              ? { volume, ...durability }
              : { volume, ...durability, beforeStorageStep: (operation, id) => inject(operation, id) },
          ),
        async destroy() {
          volume.sessions.clear();
        },
      };
    },
  };
}
