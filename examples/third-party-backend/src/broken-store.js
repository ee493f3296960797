// The same store with a realistic durability bug, kept to show that the fault harness catches it:
// the temp file is renamed over the session file without an fsync first. The rename and the
// directory fsync reach the disk; the file's bytes may not, so a power loss right after an
// acknowledged append can leave an empty or cut session file (CORRUPT, the batch lost).
import { JsonDirStore, openStore } from './store.js';

/** {@link JsonDirStore} without the fsync of the temp file before its rename. Do not use. */
export class JsonDirStoreWithoutFsync extends JsonDirStore {
  async syncTempFile() {
    // The bug: nothing makes the temp file's data durable before the rename publishes it.
  }
}

/**
 * Opens the broken variant, with the options of `openJsonDirStore`.
 * @param {import('./store.js').JsonDirStoreOptions} options
 */
export function openJsonDirStoreWithoutFsync(options) {
  return openStore(new JsonDirStoreWithoutFsync(options));
}
