// Descriptors of read() iterators: given back when a stream ends, is broken off, or is abandoned
// and the store closes.
import { isTidemarkError } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { openJsonlStore } from '../src/index.js';
import { faultyFs } from './faulty-fs.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('a read() iterator its caller stops consuming', () => {
  // Guards: close() closes the descriptors of read() iterators abandoned mid-stream, which then answer CLOSED.
  it('gives its descriptor back at close(), and then answers CLOSED', async () => {
    const f = faultyFs();
    const store = await openJsonlStore({ root: tempDir(), fs: f.fs });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 5, true));
    const held = f.openHandles; // the kept-open append descriptor
    const iterator = store.read('s')[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual(ev(0));
    expect(f.openHandles).toBe(held + 1);
    // Neither break nor return(): the generator's finally never runs on its own.
    await store.close();
    expect(f.openHandles).toBe(0);
    const after = await iterator.next().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isTidemarkError(after) && after.code).toBe('CLOSED');
    expect(f.openHandles).toBe(0);
  });

  // Guards: a read() iterator closes its own descriptor when finished or broken off.
  it('closes its descriptor itself when it runs to the end or is broken off', async () => {
    const f = faultyFs();
    const store = await openJsonlStore({ root: tempDir(), fs: f.fs });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 5, true));
    const held = f.openHandles;
    const all = [];
    for await (const event of store.read('s')) all.push(event);
    expect(all).toHaveLength(5);
    expect(f.openHandles).toBe(held);
    for await (const event of store.read('s')) if (event.seq === 1) break;
    expect(f.openHandles).toBe(held);
    await store.close();
    expect(f.openHandles).toBe(0);
  });
});
