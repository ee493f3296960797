/**
 * @packageDocumentation
 * Chat persistence for the Vercel AI SDK on any tidemark store: `createChat`, `loadChat`
 * (validated with `validateUIMessages` when schemas are given), `saveChat` that appends only new
 * or changed `UIMessage`s, an end handler for `toUIMessageStreamResponse` /
 * `createUIMessageStream` that also records aborts, and a compare-and-set active stream id for
 * resumable streams.
 */
export { chatIdOfSession, sessionIdOfChat } from './chat-ids.js';
export { BOUNDARY_TYPE, CHAT_EVENT, CHAT_FORMAT, type ChatEnd } from './chat-log.js';
export {
  type ChatEndEvent,
  type ChatState,
  ChatStore,
  type ChatStoreOptions,
  type ChatValidation,
  type CreateChatInit,
  createChatStore,
  type OnEndOptions,
  type SaveChatArgs,
  type SaveResult,
} from './chat-store.js';
