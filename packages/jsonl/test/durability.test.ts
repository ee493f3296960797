// Directory-entry durability: what the first append creates and what delete removes survive a
// power loss in an order that never leaves a session half there.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore, sessionPaths } from '../src/index.js';
import { faultyFs } from './faulty-fs.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('the first append into a store whose root and its parents do not exist yet', () => {
  // Guards: every directory created for the root has its parent fsynced before the first batch is acknowledged.
  it('fsyncs the parent of every directory it creates, so power loss cannot drop the acknowledged batch with them', async () => {
    const base = tempDir();
    const root = join(base, 'home', '.tidemark', 'sessions');
    const f = faultyFs();
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's' });
    await store.append('s', [ev(0, 'turn/end')]);
    await store.close();
    const synced = f.calls.filter((c) => c.startsWith('syncDir ')).map((c) => c.slice('syncDir '.length));
    for (const dir of [base, join(base, 'home'), join(base, 'home', '.tidemark'), root])
      expect(synced).toContain(dir);
  });
});

describe('delete under power loss', () => {
  // Guards: delete syncs the log removal before removing the sidecar, so a crash cannot half-delete.
  it('makes the log removal durable before removing the summary, so a crash cannot leave a session without its title', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 's');
    const f = faultyFs();
    const store = await openJsonlStore({ root, fs: f.fs });
    await store.create({ id: 's', title: 'kept' });
    await store.append('s', evs(0, 2, true));
    await store.update('s', { tags: ['t'] });
    f.calls.length = 0;
    await store.delete('s');
    await store.close();
    const at = (call: string) => f.calls.indexOf(call);
    const logGone = at(`unlink ${paths.log}`);
    const summaryGone = at(`unlink ${paths.summary}`);
    expect(logGone).toBeGreaterThanOrEqual(0);
    expect(summaryGone).toBeGreaterThan(logGone);
    // A directory sync between the two unlinks: the second cannot persist without the first.
    const between = f.calls.slice(logGone + 1, summaryGone);
    expect(between).toContain(`syncDir ${paths.dir}`);
    // And one after both, as before: the delete is durable when it resolves.
    expect(f.calls.slice(summaryGone + 1)).toContain(`syncDir ${paths.dir}`);
  });
});
