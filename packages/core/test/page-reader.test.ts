// PageReader: the events of a page stream, handed out as the async generator of read() did.
import { describe, expect, it } from 'vitest';
import { readAllEvents, type SessionEvent, type SessionStore, TidemarkError } from '../src/index.js';
import { PageReader } from '../src/page-reader.js';

const T = '2026-01-01T00:00:00.000Z';
const event = (seq: number): SessionEvent => ({ seq, type: 'x', time: T, data: seq });

/** Pages of the given seqs; `log` records what the stream did. */
function pages(seqs: number[][], log: string[]): () => AsyncIterable<readonly SessionEvent[]> {
  return () =>
    (async function* () {
      log.push('start');
      try {
        for (const page of seqs) {
          log.push(`page ${page.join(',')}`);
          yield page.map(event);
        }
      } finally {
        log.push('finally');
      }
    })();
}

async function drain(reader: AsyncIterator<SessionEvent>): Promise<number[]> {
  const seqs: number[] = [];
  for (;;) {
    const next = await reader.next();
    if (next.done) return seqs;
    seqs.push(next.value.seq);
  }
}

describe('PageReader', () => {
  it('hands out every event of every page in order, across empty pages', async () => {
    const log: string[] = [];
    const reader = new PageReader(pages([[0, 1], [], [2], [3, 4, 5]], log), () => {});
    expect(log).toEqual([]); // nothing starts before the first next()
    expect(await drain(reader)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await reader.next()).toEqual({ done: true, value: undefined });
    expect(log.at(-1)).toBe('finally');
  });

  it('runs the check before each event, and ends the stream when it throws', async () => {
    const log: string[] = [];
    let open = true;
    const reader = new PageReader(pages([[0, 1, 2]], log), () => {
      if (!open) throw new TidemarkError('CLOSED', 'closed');
    });
    expect((await reader.next()).value?.seq).toBe(0);
    open = false;
    await expect(reader.next()).rejects.toMatchObject({ code: 'CLOSED' });
    expect(log).toContain('finally');
    open = true;
    expect(await reader.next()).toEqual({ done: true, value: undefined });
  });

  it('rejects when the stream cannot start, then is done', async () => {
    const reader = new PageReader(
      () => {
        throw new TidemarkError('INVALID', 'bad id');
      },
      () => {},
    );
    await expect(reader.next()).rejects.toMatchObject({ code: 'INVALID' });
    expect(await reader.next()).toEqual({ done: true, value: undefined });
  });

  it('closes the page stream when the consumer stops early', async () => {
    const log: string[] = [];
    const reader = new PageReader(pages([[0, 1], [2]], log), () => {});
    const iterable = { [Symbol.asyncIterator]: () => reader };
    for await (const e of iterable) if (e.seq === 0) break;
    expect(log).toEqual(['start', 'page 0,1', 'finally']);
    expect(await reader.next()).toEqual({ done: true, value: undefined });
  });

  it('answers next() calls made before the previous one settled in order', async () => {
    const reader = new PageReader(pages([[0], [1, 2]], []), () => {});
    const answers = await Promise.all([reader.next(), reader.next(), reader.next(), reader.next()]);
    expect(answers.map((a) => (a.done ? 'done' : a.value.seq))).toEqual([0, 1, 2, 'done']);
  });
});

describe('readAllEvents', () => {
  it('collects read() of a store that is no SessionStoreBase', async () => {
    const store = {
      read: (_id: string, range?: { fromSeq?: number }) =>
        (async function* () {
          for (let seq = range?.fromSeq ?? 0; seq < 3; seq++) yield event(seq);
        })(),
    } as unknown as SessionStore;
    expect((await readAllEvents(store, 'a', { fromSeq: 1 })).map((e) => e.seq)).toEqual([1, 2]);
  });
});
