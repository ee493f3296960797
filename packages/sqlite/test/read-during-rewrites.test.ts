// A read stream spans many short transactions: when another connection deletes, re-creates or
// cuts the log between pages, the stream ends where it stands rather than splicing two logs.
import { fsyncSync } from 'node:fs';
import { join } from 'node:path';
import { prepareBatch, resolveStoreOptions, type SessionEvent, type SessionStore } from '@tidemark/core';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { appendBatch } from '../src/append.js';
import { SqliteConnection } from '../src/connection.js';
import { openSqliteStore, READ_PAGE_SIZE, type SqliteStoreOptions } from '../src/index.js';
import { events, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

/** The tags of a stream's events in order, run together: `[['old', 1000], ['new', 800]]`. */
function tagRuns(seen: readonly SessionEvent[]): [string, number][] {
  const runs: [string, number][] = [];
  for (const event of seen) {
    const tag = (event.data as { tag: string }).tag;
    const run = runs.at(-1);
    if (run !== undefined && run[0] === tag) run[1]++;
    else runs.push([tag, 1]);
  }
  return runs;
}

describe('read while another connection rewrites the log', () => {
  const P = READ_PAGE_SIZE;

  /** Two store instances on one file (as two processes): `reader` streams, `other` writes. */
  async function pair(options: Partial<SqliteStoreOptions> = {}) {
    const path = join(tempDir(), 'store.db');
    const other = await openSqliteStore({ path });
    const reader = await openSqliteStore({ ...options, path });
    return { reader, other, path };
  }

  /** Streams `id`, calling `atPageEnd` once after the reader has taken the first page. */
  async function readAround(reader: SessionStore, id: string, atPageEnd: () => Promise<unknown>) {
    const seen: SessionEvent[] = [];
    for await (const event of reader.read(id)) {
      seen.push(event);
      if (seen.length === P) await atPageEnd();
    }
    return seen;
  }

  // Guards: a delete under an open read stream ends it quietly instead of rejecting NOT_FOUND.
  it('a delete mid-stream ends the stream there (README), it does not reject with NOT_FOUND', async () => {
    const { reader, other } = await pair();
    await other.create({ id: 's' });
    await other.append('s', events(0, 2 * P + 500, 2 * P + 500, 'old'));
    const seen = await readAround(reader, 's', () => other.delete('s'));
    expect(tagRuns(seen)).toEqual([['old', P]]);
    await reader.close();
    await other.close();
  });

  // Guards: a stream never splices the old log with a re-created session's new one.
  it('a delete and re-create of the id mid-stream ends the stream: old and new logs are never spliced', async () => {
    const { reader, other } = await pair();
    await other.create({ id: 's' });
    await other.append('s', events(0, 2 * P + 500, 2 * P + 500, 'old'));
    const seen = await readAround(reader, 's', async () => {
      await other.delete('s');
      await other.create({ id: 's' });
      await other.append('s', events(0, P + 800, P + 800, 'new'));
    });
    expect(tagRuns(seen)).toEqual([['old', P]]);
    expect(tagRuns((await other.load('s')).events)).toEqual([['new', P + 800]]);
    await reader.close();
    await other.close();
  });

  // Guards: a stream never continues an old prefix with a tail appended after a cut.
  it('a tail cut below the reader followed by new appends ends the stream: no old prefix with a new tail', async () => {
    const { reader, other } = await pair();
    await other.create({ id: 's' });
    // Committed through P / 2 - 1; the rest is an interrupted tail.
    await other.append('s', [...events(0, P / 2, P / 2, 'old'), ...events(P / 2, 2 * P, 0, 'old')]);
    const seen = await readAround(reader, 's', async () => {
      expect((await other.load('s', { tail: 'cut' })).recovered?.cutEvents).toBe(2 * P);
      await other.append('s', events(P / 2, P + 500, P + 500, 'new'));
    });
    expect(tagRuns(seen)).toEqual([['old', P]]);
    await reader.close();
    await other.close();
  });

  // Guards: a commit between read's two statements of one page is no false CORRUPT.
  it('a tail cut and new appends committed between two statements of read are no false CORRUPT', async () => {
    let commitNow: (() => void) | undefined;
    let armed = false;
    const { reader, other, path } = await pair({
      // Only times the other connection's commit (as another process may); throws nothing.
      beforeStorageStep(step) {
        if (armed && step === 'SELECT sessions') {
          armed = false;
          commitNow!();
        }
      },
    });
    // The other writer's append, run synchronously inside the hook: the store's own append path
    // on a connection of its own (a store method would only queue it).
    const settings = resolveStoreOptions({}, 'test');
    const db = new Database(path);
    const writer = new SqliteConnection(db, path, settings, undefined, fsyncSync);
    commitNow = () =>
      appendBatch(writer, 's', prepareBatch(events(P, 500, 500, 'new'), settings.limits, 's'), undefined);
    await other.create({ id: 's' });
    await other.append('s', [...events(0, P, P, 'old'), ...events(P, P + 500, 0, 'old')]); // tail P..
    const seen = await readAround(reader, 's', async () => {
      await other.load('s', { tail: 'cut' }); // the log is 0..P-1 now
      armed = true;
    });
    expect(armed).toBe(false);
    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: P + 500 }, (_, i) => i));
    expect(tagRuns(seen)).toEqual([
      ['old', P],
      ['new', 500],
    ]);
    writer.close();
    await reader.close();
    await other.close();
  });
});
