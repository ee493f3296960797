// load({ tail: 'cut' }) that fails half way: whatever state the cut left, the writer that no longer
// describes the log is dropped, so acknowledged appends are never lost or misnumbered.
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore, sessionPaths } from '../src/index.js';
import { faultyFs } from './faulty-fs.js';
import { ev, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe("load({ tail: 'cut' }) that fails half way", () => {
  // Guards: a cut that failed after renaming the rewritten log drops its stale writer (no append to the unlinked file).
  it('after the log was replaced, the next append does not go to the replaced file (acknowledged loss)', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    let renamedLog = false;
    const f = faultyFs((call, path) => {
      if (call === 'rename' && path === paths.log) renamedLog = true;
      else if (renamedLog && call === 'syncDir' && path === paths.dir) return 'EIO';
      return undefined;
    });
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's' });
    // The boundary (seq 1) sits inside the batch: the cut must re-frame it, i.e. rewrite the log.
    await store.append('s', [ev(0), ev(1, 'turn/end'), ev(2)]);
    await expect(store.load('s', { tail: 'cut' })).rejects.toMatchObject({ code: 'IO' });
    f.rule = () => undefined;
    renamedLog = false;
    // Whatever the failed cut left, an append the store acknowledges must be in the log.
    const { events } = await store.load('s');
    const next = events.length;
    await store.append('s', [ev(next, 'turn/end')]);
    await store.close();
    const reopened = await openJsonlStore({ root });
    const after = await reopened.load('s');
    expect(after.events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq), next]);
    await reopened.close();
  });

  // Guards: a cut whose reopen failed drops its writer, so the next append rescans and keeps seqs contiguous.
  it('when the log cannot be reopened after the rewrite, the next append does not leave a seq gap', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    let renamedLog = false;
    let failOpen = false;
    const f = faultyFs((call, path) => {
      if (call === 'rename' && path === paths.log) renamedLog = true;
      else if (renamedLog && call === 'open' && path === paths.log && failOpen) {
        failOpen = false;
        return 'EMFILE';
      }
      return undefined;
    });
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's' });
    await store.append('s', [ev(0), ev(1, 'turn/end'), ev(2)]);
    failOpen = true;
    await expect(store.load('s', { tail: 'cut' })).rejects.toMatchObject({ code: 'IO' });
    f.rule = () => undefined;
    const { events } = await store.load('s');
    const next = events.length;
    await store.append('s', [ev(next, 'turn/end')]);
    await store.close();
    const reopened = await openJsonlStore({ root });
    const after = await reopened.load('s');
    expect(after.events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq), next]);
    await reopened.close();
  });
});
