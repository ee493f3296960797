// The append workloads of issue 14, each against a hand-written better-sqlite3 baseline doing the
// same work on the same schema and pragmas, in interleaved rounds (the order flips every round so
// that neither side always meets the other's garbage or page cache), judged on the median of the
// per-round ratios:
//   W1  durable 1-event appends of one session vs BEGIN IMMEDIATE + INSERT event + UPDATE summary
//       row + COMMIT (same indexes, synchronous=FULL);
//   W5  64 sessions appending at once vs the same hand-written transaction, one commit per append;
//   CPU one-event appends with synchronous=OFF vs a raw autocommit INSERT (µs of CPU per append).
import Database from 'better-sqlite3';
import { openSqliteStore } from '../dist/index.js';
import { connectionOf } from '../dist/store.js';

const TIME = '2026-01-01T00:00:00.000Z';
const now = () => performance.now();

function eventData(seq) {
  return { role: 'assistant', text: `step ${seq} of the agent`, tokens: seq % 97 };
}

function median(values) {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Runs `a` and `b` (async, each returning elapsed ms) for `rounds` rounds, alternating order. */
async function interleave(rounds, a, b) {
  const as = [];
  const bs = [];
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      as.push(await a());
      bs.push(await b());
    } else {
      bs.push(await b());
      as.push(await a());
    }
  }
  return { as, bs, ratios: as.map((ms, i) => bs[i] / ms) };
}

/**
 * The hand-written equivalent of an append on a store's own schema: one transaction that inserts
 * the event and updates the session's summary row (so the same four b-trees: events, sessions and
 * its two list indexes), at synchronous `sync`.
 */
async function handWritten(path, sessions, sync) {
  const store = await openSqliteStore({ path });
  for (const id of sessions) await store.create({ id, cwd: '/work/bench' });
  for (const id of sessions) await store.append(id, [{ seq: 0, type: 'user/message', time: TIME, data: {} }]);
  await store.close();
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${sync}`);
  db.pragma('foreign_keys = ON');
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  const insert = db.prepare(
    'INSERT INTO events (session_id, seq, type, time, data, crc) VALUES (?, ?, ?, ?, ?, 0)',
  );
  const update = db.prepare(
    'UPDATE sessions SET updated_at = ?, event_count = ?, committed_seq = ? WHERE id = ?',
  );
  const next = new Map(sessions.map((id) => [id, 1]));
  return {
    append(id) {
      const seq = next.get(id);
      next.set(id, seq + 1);
      begin.run();
      insert.run(id, seq, 'tool/call', TIME, JSON.stringify(eventData(seq)));
      update.run(new Date().toISOString(), seq + 1, seq, id);
      commit.run();
    },
    close: () => db.close(),
  };
}

/** A store with `sessions` created and one event each; `next` tracks each session's next seq. */
async function storeWith(path, sessions, options = {}) {
  const store = await openSqliteStore({ path, ...options });
  for (const id of sessions) await store.create({ id, cwd: '/work/bench' });
  for (const id of sessions) await store.append(id, [{ seq: 0, type: 'user/message', time: TIME, data: {} }]);
  const next = new Map(sessions.map((id) => [id, 1]));
  return {
    store,
    append(id) {
      const seq = next.get(id);
      next.set(id, seq + 1);
      return store.append(id, [{ seq, type: 'tool/call', time: TIME, data: eventData(seq) }]);
    },
  };
}

/** W1: durable 1-event appends of one session, store vs hand-written transaction. */
export async function w1(work, { rounds = 21, perRound = 40 } = {}) {
  // Many short rounds: one fsync per append on both sides, and the shared disk's latency drifts
  // within seconds, so the per-round ratios of short neighbouring rounds are what compares.
  const ids = ['w1'];
  const s = await storeWith(`${work}/w1-store.db`, ids);
  const raw = await handWritten(`${work}/w1-raw.db`, ids, 'FULL');
  const { as, bs, ratios } = await interleave(
    rounds,
    async () => {
      const t = now();
      for (let i = 0; i < perRound; i++) await s.append('w1');
      return now() - t;
    },
    async () => {
      const t = now();
      for (let i = 0; i < perRound; i++) raw.append('w1');
      return now() - t;
    },
  );
  await s.store.close();
  raw.close();
  return {
    name: 'W1 durable 1-event appends vs hand-written transaction (per s)',
    store: Math.round(perRound / (median(as) / 1000)),
    raw: Math.round(perRound / (median(bs) / 1000)),
    ratio: Number(median(ratios).toFixed(3)),
    goal: 0.9,
    better: 'higher',
  };
}

/** W5: `sessions` sessions appending at once, store (group commit) vs one commit per append. */
export async function w5(work, { rounds = 7, sessions = 64, perSession = 20 } = {}) {
  const ids = Array.from({ length: sessions }, (_, i) => `w5-${i}`);
  const s = await storeWith(`${work}/w5-store.db`, ids);
  const raw = await handWritten(`${work}/w5-raw.db`, ids, 'FULL');
  const total = sessions * perSession;
  const { as, bs, ratios } = await interleave(
    rounds,
    async () => {
      const t = now();
      await Promise.all(
        ids.map(async (id) => {
          for (let i = 0; i < perSession; i++) await s.append(id);
        }),
      );
      return now() - t;
    },
    async () => {
      // One process, one synchronous connection: "64 sessions at once" is one commit per append,
      // the appends of the sessions interleaved.
      const t = now();
      for (let i = 0; i < perSession; i++) for (const id of ids) raw.append(id);
      return now() - t;
    },
  );
  await s.store.close();
  raw.close();
  return {
    name: `W5 ${sessions} sessions appending at once vs one commit per append (appends per s)`,
    store: Math.round(total / (median(as) / 1000)),
    raw: Math.round(total / (median(bs) / 1000)),
    ratio: Number(median(ratios).toFixed(3)),
    goal: 2,
    better: 'higher',
  };
}

/**
 * CPU per 1-event append without fsync (synchronous=OFF on all sides), µs of process CPU time;
 * medians of rounds. Also the hand-written transaction of W1, which shows what the SQL alone costs.
 */
export async function cpuPerAppend(work, { rounds = 7, perRound = 2000 } = {}) {
  const s = await storeWith(`${work}/cpu-store.db`, ['cpu'], { durability: 'relaxed' });
  connectionOf.get(s.store).pragma('synchronous = OFF');
  const db = new Database(`${work}/cpu-raw.db`);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.exec(
    'CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, time TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, seq)) STRICT, WITHOUT ROWID',
  );
  const insert = db.prepare('INSERT INTO events VALUES (?, ?, ?, ?, ?)');
  const hand = await handWritten(`${work}/cpu-hand.db`, ['cpu'], 'OFF');
  let rawSeq = 0;
  const store = [];
  const raw = [];
  const handUs = [];
  // CPU time (user + system) rather than wall time: on a shared machine the other tenants stretch
  // wall time, not the work done per append.
  const cpuUs = async (work, into) => {
    const start = process.cpuUsage();
    await work();
    const used = process.cpuUsage(start);
    into.push((used.user + used.system) / perRound);
  };
  for (let r = 0; r < rounds; r++) {
    await cpuUs(async () => {
      for (let i = 0; i < perRound; i++) await s.append('cpu');
    }, store);
    await cpuUs(async () => {
      for (let i = 0; i < perRound; i++, rawSeq++)
        insert.run('cpu', rawSeq, 'tool/call', TIME, JSON.stringify(eventData(rawSeq)));
    }, raw);
    await cpuUs(async () => {
      for (let i = 0; i < perRound; i++) hand.append('cpu');
    }, handUs);
  }
  await s.store.close();
  db.close();
  hand.close();
  const fixed = (x) => Number(x.toFixed(1));
  return {
    storeAppendUs: fixed(median(store)),
    rawInsertUs: fixed(median(raw)),
    handWrittenTransactionUs: fixed(median(handUs)),
  };
}
