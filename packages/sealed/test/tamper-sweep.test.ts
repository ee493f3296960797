// The tamper sweep: a sealed store of several sessions is written to a real JSONL root and a real
// SQLite file; then every sealed record in turn is changed in the backend's own files (its line or
// row checksum recomputed, as anyone who can write those files would), and a new store reads it.
// Each change must read as CORRUPT naming the session and the seq, and be reported by verify; the
// other sessions still load whole, the tampered one is still listed (never absent), and the store
// stays writable. Records of both forms are swept: sealed on their own (ts1, the one-event
// batches) and sealed a batch at a time (ts2: the batch's first record holds its ciphertext, each
// later one its index and the first's IV). Kinds: a flipped bit (in the IV, the ciphertext or the
// tag, by record; in a later record of a batch, in the IV it repeats), a seq
// swapped with its neighbour's, a record moved in from another session, plaintext slipped in, a
// key id the keyring lacks; and the whole store opened with a keyring that lacks the key.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { type JsonValue, type SessionStore, TidemarkError } from '@tidemark/core';
import { crc32Utf8, openJsonlStore } from '@tidemark/jsonl';
import { openSqliteStore } from '@tidemark/sqlite';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Keyring,
  SEALED_KEY,
  type SealedFailure,
  type SealedStore,
  sealedFailureOf,
  sealStore,
} from '../src/index.js';
import { filesUnder, removeTempDirs, tempDir } from './backends.js';
import { ev, K1, keyring } from './helpers.js';

/** A stored record: where it is and its (sealed) data as the backend holds it. */
interface Stored {
  session: string;
  seq: number;
  data: JsonValue;
}

/** One backend's files, read and changed below the store. */
interface Disk {
  readonly name: string;
  open(keys: Keyring): Promise<SealedStore>;
  records(): Stored[];
  /** Replaces the data of (session, seq), with the backend's checksum of the new row or line. */
  setData(session: string, seq: number, data: JsonValue): void;
  /** Takes the files back to what {@link Disk.snapshot} saw. */
  snapshot(): void;
  restore(): void;
}

// Three sessions, ten sealed records: prompts (firstPrompt), tool calls, a sealed title and attrs.
const SESSIONS: Record<string, { title: string; batches: Array<Array<[string, JsonValue]>> }> = {
  alpha: {
    title: 'migrate the orders table',
    batches: [
      [
        ['user/message', { text: 'add a column' }],
        ['tool/call', { callId: 'c1', cmd: 'psql -c "ALTER TABLE orders"' }],
      ],
      [
        ['tool/result', { callId: 'c1', out: 'ALTER TABLE' }],
        ['assistant/message', { text: 'done' }],
        ['turn/end', null],
      ],
    ],
  },
  beta: {
    title: 'flaky build',
    batches: [
      [
        ['user/message', { text: 'why is CI red' }],
        ['assistant/message', { text: 'a timeout' }],
        ['turn/end', null],
      ],
    ],
  },
  gamma: {
    title: 'notes',
    batches: [[['user/message', 'a bare string prompt']], [['turn/end', { reason: 'done' }]]],
  },
};

async function seed(store: SessionStore): Promise<void> {
  for (const [id, { title, batches }] of Object.entries(SESSIONS)) {
    await store.create({ id, title });
    let seq = 0;
    for (const batch of batches)
      await store.append(
        id,
        batch.map(([type, data]) => ev(seq++, data, type)),
      );
    await store.update(id, { attrs: { owner: `${id}@example.com` } });
  }
  await store.close();
}

/** Saves and restores every file under `dir` (a tamper case may add or change files). */
function dirSnapshots(dir: string): Pick<Disk, 'snapshot' | 'restore'> {
  let saved = new Map<string, Buffer>();
  return {
    snapshot() {
      saved = new Map(filesUnder(dir).map((path) => [path, readFileSync(path)]));
    },
    restore() {
      for (const path of filesUnder(dir)) if (!saved.has(path)) rmSync(path);
      for (const [path, bytes] of saved) writeFileSync(path, bytes);
    },
  };
}

async function jsonlDisk(): Promise<Disk> {
  const root = tempDir('tidemark-tamper-jsonl-');
  await seed(sealStore(await openJsonlStore({ root }), { keys: keyring }));
  const logOf = (session: string) => {
    const path = filesUnder(root).find((p) => p.endsWith(`/${session}.jsonl`));
    if (path === undefined) throw new Error(`no log of ${session} under ${root}`);
    return path;
  };
  const lines = (session: string) => readFileSync(logOf(session), 'utf8').split('\n');
  return {
    name: 'jsonl',
    open: async (keys) => sealStore(await openJsonlStore({ root }), { keys }),
    records: () =>
      Object.keys(SESSIONS).flatMap((session) =>
        lines(session)
          .slice(1)
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as { seq: number; data: JsonValue })
          .map(({ seq, data }) => ({ session, seq, data })),
      ),
    setData(session, seq, data) {
      const all = lines(session);
      const at = all.findIndex((line, i) => i > 0 && line !== '' && JSON.parse(line).seq === seq);
      const { crc: _old, ...fields } = JSON.parse(all[at]!) as Record<string, JsonValue>;
      // The line's crc is the CRC-32 of its bytes before `,"crc":"` (the format's last field).
      const body = JSON.stringify({ ...fields, data }).slice(0, -1);
      all[at] = `${body},"crc":"${crc32Utf8(body).toString(16).padStart(8, '0')}"}`;
      writeFileSync(logOf(session), all.join('\n'));
    },
    ...dirSnapshots(root),
  };
}

async function sqliteDisk(): Promise<Disk> {
  const dir = tempDir('tidemark-tamper-sqlite-');
  const path = join(dir, 'sealed.db');
  await seed(sealStore(await openSqliteStore({ path }), { keys: keyring }));
  const raw = <T>(use: (db: Database.Database) => T): T => {
    const db = new Database(path);
    try {
      return use(db);
    } finally {
      // Nothing left in the WAL: the snapshot of the directory is the whole database.
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    }
  };
  return {
    name: 'sqlite',
    open: async (keys) => sealStore(await openSqliteStore({ path }), { keys }),
    records: () =>
      raw((db) =>
        (
          db.prepare('SELECT session_id, seq, data FROM events ORDER BY session_id, seq').all() as Array<{
            session_id: string;
            seq: number;
            data: string;
          }>
        ).map((row) => ({ session: row.session_id, seq: row.seq, data: JSON.parse(row.data) as JsonValue })),
      ),
    setData(session, seq, data) {
      raw((db) => {
        const { type, time } = db
          .prepare('SELECT type, time FROM events WHERE session_id = ? AND seq = ?')
          .get(session, seq) as { type: string; time: string };
        const text = JSON.stringify(data);
        // The row's crc: CRC-32 of type, time and data, as the backend computes it (rows.ts).
        db.prepare('UPDATE events SET data = ?, crc = ? WHERE session_id = ? AND seq = ?').run(
          text,
          crc32(`${type}\u0000${time}\u0000${text}`),
          session,
          seq,
        );
      });
    },
    ...dirSnapshots(dir),
  };
}

const tokenOf = (data: JsonValue) => (data as Record<string, string>)[SEALED_KEY]!;
const sealed = (token: string): JsonValue => ({ [SEALED_KEY]: token });

/**
 * The token with bit `bit` of its IV, ciphertext or tag flipped (`part` 0, 1 or 2); a later record
 * of a batch holds only the IV, where the bit is flipped whatever `part` says.
 */
function flipped(token: string, part: number, bit: number): string {
  const parts = token.split('.');
  if (parts.length === 4 && parts[0] === 'ts2') {
    const ivBytes = Buffer.from(parts[3]!, 'base64url');
    const at = (bit >> 3) % ivBytes.length;
    ivBytes[at] = ivBytes[at]! ^ (1 << (bit & 7));
    return [...parts.slice(0, 3), ivBytes.toString('base64url')].join('.');
  }
  // ts1: version, key id, iv, ct; a ts2 batch's first record has its count after the key id.
  const prefix = parts.slice(0, parts.length - 2);
  const [iv, ct] = parts.slice(-2) as [string, string];
  const ivBytes = Buffer.from(iv, 'base64url');
  const ctBytes = Buffer.from(ct, 'base64url');
  const tagStart = ctBytes.length - 16;
  const [bytes, from, to] =
    part === 0
      ? [ivBytes, 0, ivBytes.length]
      : part === 1
        ? [ctBytes, 0, tagStart]
        : [ctBytes, tagStart, ctBytes.length];
  const at = from + ((bit >> 3) % (to - from));
  bytes[at] = bytes[at]! ^ (1 << (bit & 7));
  return [...prefix, ivBytes.toString('base64url'), ctBytes.toString('base64url')].join('.');
}

interface TamperCase {
  kind: string;
  failure: SealedFailure;
  /** Changes the disk; returns the seq at which the session must read as CORRUPT. */
  apply(disk: Disk, record: Stored, index: number, all: Stored[]): number;
}

const CASES: TamperCase[] = [
  {
    kind: 'a flipped bit',
    failure: 'tampered',
    apply(disk, record, index) {
      disk.setData(record.session, record.seq, sealed(flipped(tokenOf(record.data), index % 3, index * 37)));
      return record.seq;
    },
  },
  {
    kind: 'its seq swapped with a neighbour',
    failure: 'tampered',
    apply(disk, record, _index, all) {
      const mine = all.filter((r) => r.session === record.session);
      const other = mine.find((r) => r.seq === record.seq + 1) ?? mine.find((r) => r.seq === record.seq - 1)!;
      disk.setData(record.session, record.seq, other.data);
      disk.setData(record.session, other.seq, record.data);
      return Math.min(record.seq, other.seq);
    },
  },
  {
    kind: 'a record moved in from another session',
    failure: 'tampered',
    apply(disk, record, index, all) {
      const others = all.filter((r) => r.session !== record.session);
      const from = others.find((r) => r.seq === record.seq) ?? others[index % others.length]!;
      disk.setData(record.session, record.seq, from.data);
      return record.seq;
    },
  },
  {
    kind: 'plaintext slipped in',
    failure: 'plaintext',
    apply(disk, record) {
      disk.setData(record.session, record.seq, { text: 'slipped in' });
      return record.seq;
    },
  },
  {
    kind: 'a key id the keyring lacks',
    failure: 'unknown-key',
    apply(disk, record) {
      const [version, , ...rest] = tokenOf(record.data).split('.');
      disk.setData(record.session, record.seq, sealed([version, 'k9', ...rest].join('.')));
      return record.seq;
    },
  },
];

async function failureOf(run: () => Promise<unknown>): Promise<TidemarkError> {
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TidemarkError);
  return error as TidemarkError;
}

describe.each([
  ['jsonl', jsonlDisk],
  ['sqlite', sqliteDisk],
] as const)('every sealed record of a %s store, tampered on disk', (_name, make) => {
  let disk: Disk;
  let records: Stored[];
  let intact: Map<string, unknown[]>;

  beforeAll(async () => {
    disk = await make();
    disk.snapshot();
    records = disk.records();
    const store = await disk.open(keyring);
    intact = new Map();
    for (const id of Object.keys(SESSIONS)) intact.set(id, (await store.load(id)).events);
    await store.close();
  });
  afterAll(() => removeTempDirs());

  it('holds every record sealed, in both forms', () => {
    expect(records).toHaveLength(10);
    const forms = records.map((record) => {
      const token = tokenOf(record.data);
      expect(token).toMatch(/^ts[12]\.k2\./);
      return token.startsWith('ts1.') ? 'alone' : token.split('.').length === 5 ? 'first' : 'later';
    });
    // gamma's one-event batches alone; alpha's two batches and beta's one, a batch at a time.
    expect(forms.filter((f) => f === 'alone')).toHaveLength(2);
    expect(forms.filter((f) => f === 'first')).toHaveLength(3);
    expect(forms.filter((f) => f === 'later')).toHaveLength(5);
  });

  for (const tamper of CASES) {
    it(`reads ${tamper.kind} as CORRUPT at its session and seq, for each record`, async () => {
      const seen: string[] = [];
      for (const [index, record] of records.entries()) {
        const where = `${tamper.kind}: ${record.session} seq ${record.seq}`;
        disk.restore();
        const seq = tamper.apply(disk, record, index, records);
        const store = await disk.open(keyring);
        try {
          for (const attempt of [
            () => store.load(record.session),
            async () => {
              for await (const _ of store.read(record.session)) void _;
            },
          ]) {
            const error = await failureOf(attempt);
            expect(error.code, where).toBe('CORRUPT');
            expect(error.sessionId, where).toBe(record.session);
            expect(error.location?.seq, where).toBe(seq);
            expect(sealedFailureOf(error), where).toBe(tamper.failure);
          }
          const report = await store.verify({ id: record.session });
          expect(report.sessions[0]?.status, where).toBe('corrupt');
          expect(
            report.problems.filter((p) => p.kind === 'corrupt').map((p) => [p.sessionId, p.seq]),
            where,
          ).toEqual([[record.session, seq]]);
          // Never absent: still listed, and every other session loads whole.
          const listed = await store.list();
          expect(listed.sessions.map((s) => s.id).sort(), where).toEqual(Object.keys(SESSIONS).sort());
          for (const [id, events] of intact)
            if (id !== record.session) expect((await store.load(id)).events, where).toEqual(events);
          // Still writable.
          await store.create({ id: 'after' });
          await expect(store.append('after', [ev(0)])).resolves.toEqual({ nextSeq: 1 });
          seen.push(where);
        } finally {
          await store.close();
        }
      }
      expect(seen).toHaveLength(records.length);
    });
  }

  it('reads every session as CORRUPT at seq 0 under a keyring without its key, and lists each as a problem', async () => {
    disk.restore();
    const store = await disk.open(Keyring.from({ current: 'k1', keys: { k1: K1 } }));
    try {
      for (const id of Object.keys(SESSIONS)) {
        const error = await failureOf(() => store.load(id));
        expect(error).toMatchObject({ code: 'CORRUPT', sessionId: id });
        expect(sealedFailureOf(error)).toBe('unknown-key');
      }
      for (const id of Object.keys(SESSIONS)) {
        const error = await failureOf(async () => {
          for await (const _ of store.read(id)) void _;
        });
        expect([error.sessionId, error.location?.seq, sealedFailureOf(error)]).toEqual([
          id,
          0,
          'unknown-key',
        ]);
      }
      const listed = await store.list();
      expect(listed.sessions).toEqual([]);
      expect(listed.problems.map((p) => p.id).sort()).toEqual(Object.keys(SESSIONS).sort());
      for (const problem of listed.problems) expect(sealedFailureOf(problem.error)).toBe('unknown-key');
    } finally {
      await store.close();
    }
    // The keys were missing, nothing was lost: with them, every session opens as written.
    const again = await disk.open(keyring);
    for (const [id, events] of intact) expect((await again.load(id)).events).toEqual(events);
    await again.close();
  });
});
