// Directories the JSONL store finds existing may never have been made durable by whoever created
// them (their parent's fsync failed, or that process was killed first). A session published inside
// such a directory must still survive every power loss after its append was acknowledged.

import { CrashFs, enumerateCrashStates, FaultyFs, materialize } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { openJsonlStore } from '../../src/index.js';

const ev = (seq: number) => [{ seq, type: 'turn/end', time: '2026-01-01T00:00:00.000Z', data: null }];

/** Every crash state after the ack must still have the session, with its event. */
async function lostInCrashStates(crash: CrashFs, root: string, id: string) {
  let states = 0;
  const lost: string[] = [];
  for (const state of enumerateCrashStates(crash.crashPoint('after ack'))) {
    states++;
    const store = await openJsonlStore({ root, fs: materialize(state) });
    const answer = await store.load(id).then(
      (l) => l.events.length,
      (error: unknown) => (error as { code?: string }).code ?? String(error),
    );
    if (answer !== 1) lost.push(`${state.label}: ${answer}`);
    await store.close();
  }
  return { states, lost };
}

describe('JSONL directories found existing are made durable before use', () => {
  it('a bucket whose creating append failed at the root fsync: a later acknowledged session survives power loss', async () => {
    const crash = new CrashFs();
    const faulty = new FaultyFs(crash);
    const root = '/s';
    let store = await openJsonlStore({ root, fs: faulty.fs });
    await store.create({ id: 'old', cwd: '/a' });
    await store.append('old', ev(0));
    await store.close();
    crash.checkpoint();
    store = await openJsonlStore({ root, fs: faulty.fs });
    // The first append in cwd /b creates its bucket; the fsync of the root then fails once.
    faulty.arm([{ at: 1, ops: ['syncDir'], path: /^\/s$/, errno: 'EIO' }]);
    await store.create({ id: 'first', cwd: '/b' });
    await expect(store.append('first', ev(0))).rejects.toMatchObject({ code: 'IO' });
    faulty.lift();
    await store.create({ id: 'acked', cwd: '/b' });
    expect(await store.append('acked', ev(0))).toEqual({ nextSeq: 1 });
    const { states, lost } = await lostInCrashStates(crash, root, 'acked');
    await store.close();
    expect(states).toBeGreaterThan(10);
    expect(lost).toEqual([]);
  });

  it('a root made by a process killed before syncing its parent: the first acknowledged session survives', async () => {
    const crash = new CrashFs();
    await crash.mkdir('/home', { recursive: true });
    crash.checkpoint();
    await crash.mkdir('/home/s'); // ... and the creator died here: '/home' was never synced
    const store = await openJsonlStore({ root: '/home/s', fs: crash });
    await store.create({ id: 'acked' });
    expect(await store.append('acked', ev(0))).toEqual({ nextSeq: 1 });
    const { states, lost } = await lostInCrashStates(crash, '/home/s', 'acked');
    await store.close();
    expect(states).toBeGreaterThan(1);
    expect(lost).toEqual([]);
  });

  it('a root made two levels deep (mkdir -p of ~/.tidemark/sessions) by a killed process: every ancestor entry is synced', async () => {
    const crash = new CrashFs();
    await crash.mkdir('/home', { recursive: true });
    crash.checkpoint();
    await crash.mkdir('/home/.tidemark'); // the creator died before any fsync
    await crash.mkdir('/home/.tidemark/sessions');
    const root = '/home/.tidemark/sessions';
    const store = await openJsonlStore({ root, fs: crash });
    await store.create({ id: 'acked' });
    expect(await store.append('acked', ev(0))).toEqual({ nextSeq: 1 });
    const { states, lost } = await lostInCrashStates(crash, root, 'acked');
    await store.close();
    expect(states).toBeGreaterThan(1);
    expect(lost).toEqual([]);
  });
});
