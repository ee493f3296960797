// json-dir: a tidemark backend that keeps one checksummed JSON file per session.
export { FORMAT_VERSION } from './document.js';
export { JSON_DIR_OPTION_NAMES, JsonDirStore, openJsonDirStore } from './store.js';
