// The fault harness driver of the json-dir store, for `tidemark harness --driver ./harness-driver.js`.
// The default export is a function returning a HarnessDriver of @tidemark/faults: an fs-kind
// driver, so the harness hands the store a failing (FaultyFs) or crashing (CrashFs) FileSystem
// and sweeps every operation; `real` lets it run the store on the real disk too, in child
// processes (SIGKILL, a parent path that is a file, permission denied).
import { openJsonDirStore } from './src/index.js';

/** @returns {import('@tidemark/faults').FsHarnessDriver} */
export function jsonDirDriver({
  name = 'json-dir',
  open = openJsonDirStore,
  module = new URL('./src/index.js', import.meta.url).href,
  factory = 'openJsonDirStore',
} = {}) {
  return {
    name,
    kind: 'fs',
    durabilities: ['strict'],
    open: ({ fs, root, durability }) => open({ root, fs, ...(durability !== undefined && { durability }) }),
    real: {
      location: 'dir',
      // Child processes import the store by URL: it is this package's file, wherever it is installed.
      module,
      factory,
      options: (root) => ({ root }),
    },
  };
}

export default () => jsonDirDriver();
