// `@tidemark/memory/harness`: the reference backend as a driver of the storage-fault harness
// (`tidemark harness --backends memory` loads this module, as `--driver` loads a third party's).
// It needs `@tidemark/faults` only for its types.
import type { EngineHarnessDriver } from '@tidemark/faults';
import { MemoryVolume, openMemoryStore } from './index.js';

/**
 * The reference backend as a harness driver: faults are injected through its `beforeStorageStep`
 * hook, one step per read, write, list or delete. It has no files and no process of its own, so
 * the crash and real-disk rows are `n/a`.
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

/** The harness loads the default export. */
export default memoryDriver;
