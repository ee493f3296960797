/**
 * @packageDocumentation
 * The core of tidemark: the data model, validation, errors, the {@link SessionStore} contract,
 * the pure rules every backend shares, {@link SessionStoreBase} (the base class every backend
 * extends, with its maintenance interface), and the FileSystem port of the file backends.
 */
export * from './append-after.js';
export * from './base-store.js';
export * from './boundary.js';
export * from './cursor.js';
export * from './errors.js';
export * from './event.js';
export * from './fs-port.js';
export * from './ids.js';
export * from './json.js';
export * from './keyed-queue.js';
export * from './last-events.js';
export * from './maintenance.js';
export * from './options.js';
export * from './paging.js';
export * from './reservations.js';
export * from './resume.js';
export * from './session.js';
export * from './store.js';
export * from './writer.js';
