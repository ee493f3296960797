// fork's cleanup after a failed copy must only remove what this fork created: another store
// instance may have published a child with the same id (same parent, same prefix) meanwhile.
import { describe, expect, it } from 'vitest';
import { MemoryVolume } from '../../memory/src/index.js';
import { fork, type SessionEvent } from '../src/index.js';
import { deferred, faulty, openMemoryStore } from './store-wrappers.js';

const T = '2026-01-01T00:00:00.000Z';

describe('fork cleanup across store instances', () => {
  it('a failed copy does not delete the same-id child another instance forked meanwhile', async () => {
    const volume = new MemoryVolume();
    const a = faulty(await openMemoryStore({ volume }));
    const b = await openMemoryStore({ volume });
    await a.create({ id: 'p' });
    const events: SessionEvent[] = [0, 1, 2, 3].map((seq) => ({ seq, type: 'x', time: T, data: seq }));
    await a.append('p', events);
    // A's copy waits; meanwhile B forks the same parent at the same seq under the same id, and its
    // fork is acknowledged. Then A's copy fails before writing anything.
    const gate = deferred();
    a.gate = gate.promise;
    a.failBefore.add(2);
    const forkA = fork(a, 'p', 3, { id: 'child' }).then(
      () => 'ok',
      (error: unknown) => (error as { code?: string }).code,
    );
    // Let A reach its copy append (create is done, the append waits at the gate).
    const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
    while (a.appendCalls < 2) await tick();
    // B's create comes later than A's (a different createdAt), as two instances' forks do unless
    // they land in the same millisecond. A wait for the clock to move on, not a timing assertion.
    const afterA = new Date().toISOString();
    while (new Date().toISOString() === afterA) await tick();
    const forkB = await fork(b, 'p', 3, { id: 'child' });
    expect((await b.load('child')).events).toEqual(events);
    a.gate = undefined;
    gate.resolve();
    expect(await forkA).toBe('IO');
    // B's acknowledged fork is still there, and B's writer can go on with it.
    expect((await b.load('child')).events).toEqual(events);
    await forkB.writer.push({ type: 'x', data: 'more' });
    await forkB.writer.close();
    expect((await b.load('child')).events).toHaveLength(5);
  });
});
