/**
 * @packageDocumentation
 * Claude Agent SDK session stores on tidemark: {@link TidemarkSessionStore} implements the SDK's
 * `SessionStore` (transcript mirroring, resume, listings, summaries) over any tidemark store.
 */
export { tidemarkIdOf } from './keys.js';
export { TidemarkSessionStore, type TidemarkSessionStoreOptions } from './store.js';
export { EVENT as CLAUDE_EVENT_TYPES } from './transcript.js';
