/**
 * @packageDocumentation
 * A LangGraph.js checkpointer over any tidemark store: {@link TidemarkSaver}.
 */
export { TidemarkSaver, type TidemarkSaverOptions } from './saver.js';
export { isThreadSessionId, sessionIdOfThread } from './thread-ids.js';
