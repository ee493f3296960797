/**
 * @packageDocumentation
 * OpenAI Agents JS sessions on tidemark: {@link TidemarkSession} implements the SDK's `Session`
 * with history transactions and history rewrites over any tidemark store.
 */
export { EVENT as OPENAI_EVENT_TYPES } from './history.js';
export { TidemarkSession, type TidemarkSessionOptions } from './session.js';
export { sessionIdOf, tidemarkIdOf } from './session-id.js';
