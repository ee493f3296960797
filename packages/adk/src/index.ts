/**
 * @packageDocumentation
 * Google ADK sessions on tidemark: {@link TidemarkSessionService} is ADK's `BaseSessionService`
 * over any tidemark store, with `app:` and `user:` state shared by every session of an app or user.
 */
export { appStateLog, type LogKey, sessionLog, userStateLog } from './keys.js';
export { ADK_EVENT as ADK_EVENT_TYPES } from './records.js';
export { TidemarkSessionService, type TidemarkSessionServiceOptions } from './session-service.js';
