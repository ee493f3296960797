// read() hands out the events of each page it reads (storageReadPages), and readAll() gives them
// in one array: both must answer exactly what the paged stream reads, across pages.
import { join } from 'node:path';
import { readAllEvents, type SessionEvent, type SessionStore } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, READ_PAGE_SIZE } from '../src/index.js';
import { events, rejectsWith, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

async function streamed(store: SessionStore, id: string, range?: object): Promise<number[]> {
  const seqs: number[] = [];
  for await (const event of store.read(id, range)) seqs.push(event.seq);
  return seqs;
}

const seqsOf = (list: readonly SessionEvent[]) => list.map((e) => e.seq);
const span = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('read and readAll by pages', () => {
  const P = READ_PAGE_SIZE;

  it('give every event of a log longer than a page, whole, by range and by last', async () => {
    const store = await openSqliteStore({ path: join(tempDir(), 'store.db') });
    await store.create({ id: 's' });
    await store.append('s', events(0, 2 * P + 5, 2 * P + 5));
    for (const [range, expected] of [
      [undefined, span(0, 2 * P + 4)],
      [{ fromSeq: P - 2, toSeq: P + 2 }, span(P - 2, P + 2)],
      [{ last: 3 }, span(2 * P + 2, 2 * P + 4)],
      [{ fromSeq: 10, last: P + 1 }, span(P + 4, 2 * P + 4)],
      [{ fromSeq: 3, toSeq: 3 }, [3]],
      [{ fromSeq: 2 * P + 5 }, []],
    ] as const) {
      expect(await streamed(store, 's', range)).toEqual(expected);
      expect(seqsOf(await store.readAll('s', range))).toEqual(expected);
      expect(seqsOf(await readAllEvents(store, 's', range))).toEqual(expected);
    }
    await store.close();
  });

  it('reject as read does: NOT_FOUND, INVALID, CLOSED (also after the first event)', async () => {
    const store = await openSqliteStore({ path: join(tempDir(), 'store.db') });
    await store.create({ id: 's' });
    await store.append('s', events(0, 3, 3));
    await rejectsWith(store.readAll('absent'), 'NOT_FOUND');
    await rejectsWith(streamed(store, 'absent'), 'NOT_FOUND');
    await rejectsWith(store.readAll('.bad'), 'INVALID');
    await rejectsWith(store.readAll('s', { last: 0 }), 'INVALID');
    const reader = store.read('s')[Symbol.asyncIterator]();
    expect((await reader.next()).value?.seq).toBe(0);
    await store.close();
    await rejectsWith(reader.next(), 'CLOSED');
    expect((await reader.next()).done).toBe(true);
    await rejectsWith(store.readAll('s'), 'CLOSED');
  });

  it('readAllEvents asks a proxy that stands in for read, not the store behind it', async () => {
    const store = await openSqliteStore({ path: join(tempDir(), 'store.db') });
    await store.create({ id: 's' });
    await store.append('s', events(0, 3, 3));
    const asked: string[] = [];
    const proxy = new Proxy(store, {
      get(target, key) {
        if (key === 'read')
          return (id: string, range?: object) => {
            asked.push(id);
            return target.read(id, { ...range, fromSeq: 1 });
          };
        const value = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    expect(seqsOf(await readAllEvents(proxy, 's'))).toEqual([1, 2]);
    expect(asked).toEqual(['s']);
    await store.close();
  });
});
