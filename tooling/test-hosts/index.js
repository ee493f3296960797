export { dropSchemas, postgresAvailable, testBackends } from './backends.js';
export { countingStore } from './counting.js';
export { startHost } from './hosts.js';
export { withInterleaving } from './interleave.js';
export { openStoreAt, openTwoInstances, PG_URL, postgresAnswers, sharedBackends } from './stores.js';
