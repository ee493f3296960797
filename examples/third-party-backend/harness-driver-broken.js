// The harness driver of the broken variant (src/broken-store.js: no fsync before the rename).
// `tidemark harness --quick --driver ./harness-driver-broken.js` must fail, and the replay command
// it prints must show the lost batch again.
import { jsonDirDriver } from './harness-driver.js';
import { openJsonDirStoreWithoutFsync } from './src/broken-store.js';

export default () =>
  jsonDirDriver({
    name: 'json-dir-no-fsync',
    open: openJsonDirStoreWithoutFsync,
    module: new URL('./src/broken-store.js', import.meta.url).href,
    factory: 'openJsonDirStoreWithoutFsync',
  });
