/**
 * @packageDocumentation
 * Mastra storage on tidemark: {@link TidemarkMastraStore} holds Mastra's memory domain (threads,
 * messages, resources and working memory) and workflows domain (run snapshots) in any tidemark
 * store, and composes or refuses every other domain.
 */
export { resourceSessionId, runSessionId, threadSessionId } from './ids.js';
export { TidemarkMemoryStorage } from './memory-storage.js';
export {
  type ComposedDomains,
  type DomainName,
  TIDEMARK_DOMAINS,
  TidemarkMastraStore,
  type TidemarkMastraStoreOptions,
  UnsupportedDomainError,
} from './store.js';
export { TidemarkWorkflowsStorage } from './workflows-storage.js';
