// `tidemark harness --driver @tidemark/sealed/harness/sqlite`: sealed SQLite (see ./drivers.js).
import { sealedSqliteDriver } from './drivers.js';

export default sealedSqliteDriver;
