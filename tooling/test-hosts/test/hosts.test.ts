import { isTidemarkError } from '@tidemark/core';
import { afterAll, describe, expect, it } from 'vitest';
import { type Host, openStoreAt, type SharedStore, sharedBackends, startHost } from '../index.js';

const HOST = new URL('./fixtures/raw-host.mjs', import.meta.url);
const backends = await sharedBackends();
const cleanups: SharedStore[] = [];
afterAll(async () => {
  for (const shared of cleanups) await shared.cleanup();
});

function event(seq: number, text: string) {
  return {
    seq,
    type: seq % 2 === 1 ? 'turn/end' : 'user/message',
    time: new Date().toISOString(),
    data: { text },
  };
}

describe.each(backends)('a host process over one $name store', (backend) => {
  it('sees what this process appended, and this process sees its appends', async () => {
    const shared = await backend.create();
    cleanups.push(shared);
    const store = await openStoreAt(shared.address);
    const host: Host = await startHost(shared.address, HOST, { hostOptions: { label: 'B' } });
    try {
      expect(await host.call('label')).toBe('B');
      const { id } = await store.create({});
      await store.append(id, [event(0, 'from A')]);
      expect(await host.call('load', id)).toEqual([
        expect.objectContaining({ seq: 0, data: { text: 'from A' } }),
      ]);
      // Another session: a JSONL writer keeps its session's lock while it is open.
      const other = await host.call<{ id: string }>('create', {});
      await host.call('append', other.id, [event(0, 'from B')]);
      expect((await store.load(other.id)).events.map((e) => e.data)).toEqual([{ text: 'from B' }]);
      expect(await host.call('echo', { bytes: new Uint8Array([1, 2]) })).toEqual({
        bytes: new Uint8Array([1, 2]),
      });
    } finally {
      await host.close();
      await store.close();
    }
  });

  it('hands a rejection back as a TidemarkError with its code', async () => {
    const shared = await backend.create();
    cleanups.push(shared);
    const store = await openStoreAt(shared.address);
    const host = await startHost(shared.address, HOST);
    try {
      const { id } = await store.create({});
      await store.append(id, [event(0, 'first')]);
      const stale = await host.call('append', id, [event(0, 'other')]).catch((error: unknown) => error);
      expect(isTidemarkError(stale, 'CONFLICT')).toBe(true);
      const missing = await host.call('load', 'no-such-session').catch((error: unknown) => error);
      expect(isTidemarkError(missing, 'NOT_FOUND')).toBe(true);
    } finally {
      await host.close();
      await store.close();
    }
  });

  it('rejects the pending calls of a killed host, and a later call', async () => {
    const shared = await backend.create();
    cleanups.push(shared);
    const host = await startHost(shared.address, HOST);
    await host.kill();
    await expect(host.call('label')).rejects.toThrow(/exited/);
  });

  it('runs the next host in a closed host process, with its own store and object; never after a kill or a failed close', async () => {
    const shared = await backend.create();
    cleanups.push(shared);
    const first = await startHost(shared.address, HOST, { hostOptions: { label: 'first' } });
    const { id } = await first.call<{ id: string }>('create', {});
    await first.call('append', id, [event(0, 'kept')]);
    await first.close();
    await expect(first.call('label')).rejects.toThrow(/closed/);

    const second = await startHost(shared.address, HOST, { hostOptions: { label: 'second' } });
    expect(second.pid).toBe(first.pid);
    expect(await second.call('label')).toBe('second');
    // The first host's store was closed (a JSONL writer lock released): the second writes on.
    await second.call('append', id, [event(1, 'next')]);
    expect(await second.call('load', id)).toHaveLength(2);
    await second.kill();

    const third = await startHost(shared.address, HOST, { hostOptions: { failClose: true } });
    expect(third.pid).not.toBe(first.pid);
    await third.close();
    const fourth = await startHost(shared.address, HOST);
    expect(fourth.pid).not.toBe(third.pid);
    await fourth.close();
  });
});
