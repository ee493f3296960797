/**
 * @packageDocumentation
 * The core of tidemark: the data model, validation, errors, the {@link SessionStore} contract,
 * the pure rules every backend shares, and the FileSystem port of the file backends.
 */
export * from './boundary.js';
export * from './errors.js';
export * from './event.js';
export * from './fs-port.js';
export * from './ids.js';
export * from './json.js';
export * from './resume.js';
export * from './session.js';
export * from './store.js';
export * from './writer.js';
