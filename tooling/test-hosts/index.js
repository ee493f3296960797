export { startHost } from './hosts.js';
export { openStoreAt, PG_URL, postgresAnswers, sharedBackends } from './stores.js';
