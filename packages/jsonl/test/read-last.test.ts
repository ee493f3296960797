// read({ last }): the newest events from the end of the log when it ends clean, and the full
// stream's answer (the same events, or its error) whenever the end is not clean.
import { appendFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type FileSystem, isTidemarkError, nodeFileSystem, type SessionEvent } from '@tidemark/core';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { openJsonlStore } from '../src/index.js';
import { ev, removeTempDirs, tempDir } from './helpers.js';

afterAll(removeTempDirs);

async function collect(events: AsyncIterable<SessionEvent>): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

/** The real file system, counting the bytes read from `.jsonl` logs. */
function countingFs(): { fs: FileSystem; logBytesRead: () => number } {
  let bytes = 0;
  const fs: FileSystem = {
    ...nodeFileSystem,
    async open(path, flags) {
      const handle = await nodeFileSystem.open(path, flags);
      if (!path.endsWith('.jsonl') || path.endsWith('catalog.jsonl')) return handle;
      return {
        ...handle,
        read: async (buffer, offset, length, position) => {
          const n = await handle.read(buffer, offset, length, position);
          bytes += n;
          return n;
        },
        write: handle.write.bind(handle),
        datasync: handle.datasync.bind(handle),
        sync: handle.sync.bind(handle),
        truncate: handle.truncate.bind(handle),
        size: handle.size.bind(handle),
        close: handle.close.bind(handle),
      };
    },
  };
  return { fs, logBytesRead: () => bytes };
}

/** Appends batches of the given sizes to session `id`; each batch closes a turn. */
async function appendBatches(store: Awaited<ReturnType<typeof openJsonlStore>>, id: string, sizes: number[]) {
  let seq = 0;
  for (const size of sizes) {
    const batch = Array.from({ length: size }, (_, i) =>
      ev(seq + i, i === size - 1 ? 'turn/end' : 'user/message', {
        text: `event ${seq + i}`,
        pad: 'x'.repeat(40),
      }),
    );
    await store.append(id, batch);
    seq += size;
  }
  return seq;
}

function logPath(root: string, id: string): string {
  for (const bucket of readdirSync(root)) {
    if (bucket.startsWith('.')) continue;
    const names = readdirSync(join(root, bucket));
    if (names.includes(`${id}.jsonl`)) return join(root, bucket, `${id}.jsonl`);
  }
  throw new Error(`no log for ${id}`);
}

describe('read({ last }) on JSONL', () => {
  it('equals the last events of the full stream for any batch sizes, last and fromSeq', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 40 }),
        async (sizes, last, fromSeq) => {
          const id = `s${n++}`;
          await store.create({ id });
          await appendBatches(store, id, sizes);
          const all = await collect(store.read(id));
          expect(await collect(store.read(id, { last }))).toEqual(all.slice(-last));
          expect(await collect(store.read(id, { fromSeq, last }))).toEqual(all.slice(fromSeq).slice(-last));
        },
      ),
      { numRuns: 40 },
    );
    await store.close();
  });

  it('reads only the end of a long log', async () => {
    const root = tempDir();
    const counting = countingFs();
    const writer = await openJsonlStore({ root });
    await writer.create({ id: 'long' });
    const count = await appendBatches(
      writer,
      'long',
      Array.from({ length: 1000 }, () => 5),
    );
    await writer.close();
    const size = readFileSync(logPath(root, 'long')).length;
    const reader = await openJsonlStore({ root, fs: counting.fs });
    const last = await collect(reader.read('long', { last: 3 }));
    expect(last.map((e) => e.seq)).toEqual([count - 3, count - 2, count - 1]);
    // The header and a step back from the end, not the whole log.
    expect(counting.logBytesRead()).toBeLessThan(size / 20);
    await reader.close();
  });

  it('equals the full stream past the bytes read synchronously from one descriptor', async () => {
    // On the real file system the first 256 KiB a read from the end takes come by synchronous
    // calls, the rest through the thread pool (read-handle.ts): both parts must be there.
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 'wide' });
    for (let seq = 0; seq < 40; seq += 1)
      await store.append('wide', [ev(seq, 'turn/end', { text: `event ${seq}`, pad: 'y'.repeat(20_000) })]);
    await store.close();
    const reader = await openJsonlStore({ root });
    const all = await collect(reader.read('wide'));
    expect(await collect(reader.read('wide', { last: 30 }))).toEqual(all.slice(-30));
    expect(await collect(reader.read('wide', { last: 3 }))).toEqual(all.slice(-3));
    await reader.close();
  });

  it('gives the full stream answer when the log ends in a torn fragment', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 'torn' });
    const count = await appendBatches(store, 'torn', [3, 2, 4]);
    await store.close();
    appendFileSync(logPath(root, 'torn'), '{"seq":9,"type":"user/mess');
    const reader = await openJsonlStore({ root });
    const last = await collect(reader.read('torn', { last: 2 }));
    expect(last.map((e) => e.seq)).toEqual([count - 2, count - 1]);
    await reader.close();
  });

  it('is CORRUPT, as the full stream is, when a line near the end is damaged', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 'bad' });
    await appendBatches(store, 'bad', [3, 3, 3]);
    await store.close();
    const path = logPath(root, 'bad');
    const bytes = readFileSync(path);
    // Flip a byte inside the event text of the second-to-last line.
    const lines = bytes.toString('utf8').split('\n');
    const target = lines.length - 3;
    lines[target] = lines[target]!.replace('event', 'evint');
    writeFileSync(path, lines.join('\n'));
    const reader = await openJsonlStore({ root });
    const error = await collect(reader.read('bad', { last: 1 })).catch((e: unknown) => e);
    const full = await collect(reader.read('bad')).catch((e: unknown) => e);
    expect(isTidemarkError(full, 'CORRUPT')).toBe(true);
    // The damaged line is before the last event: the fast path does not vouch for it, the full
    // stream reads it and reports it.
    expect(isTidemarkError(error, 'CORRUPT')).toBe(true);
    await reader.close();
  });

  it('sees a batch another instance appended after it opened', async () => {
    const root = tempDir();
    const a = await openJsonlStore({ root });
    const b = await openJsonlStore({ root });
    await a.create({ id: 'shared' });
    await appendBatches(a, 'shared', [2, 2]);
    expect((await collect(b.read('shared', { last: 1 })))[0]?.seq).toBe(3);
    await a.append('shared', [ev(4, 'turn/end')]);
    expect((await collect(b.read('shared', { last: 1 })))[0]?.seq).toBe(4);
    await a.close();
    await b.close();
  });
});
