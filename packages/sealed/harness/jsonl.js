// `tidemark harness --driver @tidemark/sealed/harness/jsonl`: sealed JSONL (see ./drivers.js).
import { sealedJsonlDriver } from './drivers.js';

export default sealedJsonlDriver;
