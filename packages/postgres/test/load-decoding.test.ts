// How load decodes the rows of its one statement: the sessions row first, then each event row
// checked in seq order. These guard the one-statement load against damage a plain row read would
// also catch, and against rows the server sends out of seq order.
import { crc32 } from 'node:zlib';
import { isTidemarkError, type SessionEvent } from '@tidemark/core';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../src/index.js';
import { decodeEventRow, eventChecksum, inSeqOrder } from '../src/rows.js';
import { adminPool, dropSchemas, endAdmin, PG_URL, schemaName, serverAvailable } from './server.js';

const available = await serverAvailable();
const schema = schemaName('load');
afterAll(async () => {
  if (!available) return;
  await dropSchemas([schema]);
  await endAdmin();
});

const row = (type: string, data = '{}', seq = '0', time = '2026-01-01T00:00:00.000Z') => [
  seq,
  type,
  time,
  data,
  String(eventChecksum(type, time, data)),
];

describe('decodeEventRow', () => {
  // Guards the fast path for plain types: escapes still go through JSON, raw control characters are CORRUPT.
  it('decodes plain and escaped types alike, and refuses a type no append writes', () => {
    expect(decodeEventRow('s', row('"step"'), 0).type).toBe('step');
    expect(decodeEventRow('s', row(JSON.stringify('a"b\\c\u0001é')), 0).type).toBe('a"b\\c\u0001é');
    for (const bad of ['"a\u0001b"', '"a"b"', 'step', '5']) {
      const error = (() => {
        try {
          return decodeEventRow('s', row(bad), 0);
        } catch (e) {
          return e;
        }
      })();
      expect(isTidemarkError(error, 'CORRUPT')).toBe(true);
    }
  });

  // Guards the text-mode checksum comparison: a changed checksum column is CORRUPT with its row.
  it('compares the checksum column as text from the server', () => {
    const changed = row('"step"');
    changed[4] = String(Number(changed[4]) ^ 1);
    expect(() => decodeEventRow('s', changed, 0)).toThrow(/checksum/);
  });
});

describe('eventChecksum', () => {
  // Guards the JS-folded prefix: the stored checksums stay the CRC-32 of the UTF-8 of the whole row.
  it('is the CRC-32 of type NUL time NUL data, for any text (non-ASCII and lone surrogates too)', () => {
    const text = fc.oneof(fc.string({ unit: 'grapheme-ascii' }), fc.string({ unit: 'binary' }));
    fc.assert(
      fc.property(text, text, text, (type, time, data) => {
        expect(eventChecksum(type, time, data)).toBe(crc32(`${type}\u0000${time}\u0000${data}`) | 0);
      }),
      { numRuns: 500 },
    );
  });
});

describe('inSeqOrder', () => {
  // Guards load without ORDER BY: rows already in order are taken as they are, others are sorted.
  it('keeps rows in seq order as they are and sorts the others numerically', () => {
    const ordered = [['-1'], ['0'], ['1'], ['2']];
    expect(inSeqOrder(ordered)).toBe(ordered);
    expect(inSeqOrder([['10'], ['-1'], ['9'], ['0']]).map((r) => r[0])).toEqual(['-1', '0', '9', '10']);
    expect(inSeqOrder([])).toEqual([]);
  });
});

describe.skipIf(!available)('load', () => {
  const events = (n: number): SessionEvent[] =>
    Array.from({ length: n }, (_, i) => ({
      seq: i,
      type: 'step',
      time: new Date().toISOString(),
      data: { i },
    }));

  // Guards the row-level format check of the streamed load: a newer row is UNSUPPORTED_FORMAT, not CORRUPT.
  it('a session row of a newer format is UNSUPPORTED_FORMAT before its events are decoded', async () => {
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    const meta = await store.create({});
    await store.append(meta.id, events(3));
    await adminPool().query(
      `UPDATE "${schema}".sessions SET format_version = format_version + 1 WHERE id = $1`,
      [meta.id],
    );
    await adminPool().query(`UPDATE "${schema}".events SET data = 'damaged' WHERE session_id = $1`, [
      meta.id,
    ]);
    const error = await store.load(meta.id).catch((e: unknown) => e);
    expect(isTidemarkError(error, 'UNSUPPORTED_FORMAT')).toBe(true);
    await store.close();
  });

  // Guards load's own ordering: rows stored in reverse physical order still load in seq order.
  it('reads back a parent taken before its first event (seq -1), as create accepted it', async () => {
    // Found by the contract's model test: the row decoder wanted seq ≥ 0 and called it CORRUPT.
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    try {
      await store.create({ id: 'fork-before-0', parent: { id: 'origin', seq: -1 } });
      await store.append('fork-before-0', [
        { seq: 0, type: 'note', time: '2026-01-01T00:00:00.000Z', data: 1 },
      ]);
    } finally {
      await store.close();
    }
    const reopened = await openPostgresStore({ connectionString: PG_URL, schema });
    try {
      const loaded = await reopened.load('fork-before-0');
      expect(loaded.meta.parent).toEqual({ id: 'origin', seq: -1 });
      expect(loaded.events).toHaveLength(1);
    } finally {
      await reopened.close();
    }
  });

  it('loads events in seq order whatever order the table holds them in', async () => {
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    const meta = await store.create({});
    await store.append(meta.id, events(40));
    const t = `"${schema}".events`;
    await adminPool().query(
      `WITH gone AS (DELETE FROM ${t} WHERE session_id = $1 RETURNING *)
       INSERT INTO ${t} SELECT * FROM gone ORDER BY seq DESC`,
      [meta.id],
    );
    const loaded = await store.load(meta.id);
    expect(loaded.events.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    await store.close();
  });

  // Guards the store's connection after a load that found damage: the next call on it still works.
  it('after a CORRUPT load the pool serves the next load of a healthy session', async () => {
    const store = await openPostgresStore({ connectionString: PG_URL, schema, poolSize: 1 });
    const [bad, good] = [await store.create({}), await store.create({})];
    await store.append(bad.id, events(50));
    await store.append(good.id, events(5));
    await adminPool().query(
      `UPDATE "${schema}".events SET checksum = checksum + 1 WHERE session_id = $1 AND seq = 2`,
      [bad.id],
    );
    const error = await store.load(bad.id).catch((e: unknown) => e);
    expect(isTidemarkError(error, 'CORRUPT')).toBe(true);
    expect((error as { location: { seq: number } }).location.seq).toBe(2);
    expect((await store.load(good.id)).events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    await store.close();
  });
});
