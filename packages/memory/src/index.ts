/**
 * @packageDocumentation
 * The in-memory reference backend of tidemark. It keeps the whole contract of contract §4 with no
 * storage at all, so it serves as the model the other backends are compared against, and as the
 * worked example of a backend built on `SessionStoreBase`.
 */
export {
  MEMORY_FORMAT_VERSION,
  type MemoryStorageStep,
  MemoryStore,
  type MemoryStoreOptions,
  MemoryVolume,
  openMemoryStore,
} from './store.js';
