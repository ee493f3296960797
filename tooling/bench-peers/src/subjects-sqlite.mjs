// @tidemark/sqlite and its hand-written better-sqlite3 peer. Both write the same event rows and
// keep a summary row per session with the same two list indexes, in WAL with synchronous=FULL,
// so that the difference measured is the store's own work, not a cheaper schema or setting.
import { join } from 'node:path';
import { openSqliteStore } from '@tidemark/sqlite';
import Database from 'better-sqlite3';
import { batch, sessionId, TIME } from './common.mjs';

const PAGE = 1000;

/** Pages `list` of a tidemark store through to its end; returns how many sessions it saw. */
export async function listThrough(store) {
  let seen = 0;
  let cursor;
  do {
    const page = await store.list({ limit: PAGE, ...(cursor !== undefined && { cursor }) });
    if (page.problems.length > 0) throw new Error(`list problem: ${page.problems[0].error.message}`);
    seen += page.sessions.length;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return seen;
}

/** The calls every subject answers with a tidemark store behind them. */
export function tidemarkHandle(store, settings) {
  return {
    settings,
    async append(id, events) {
      if (events[0].seq === 0) await store.create({ id, cwd: '/work/bench' });
      await store.append(id, events);
    },
    load: async (id) => (await store.load(id)).events.length,
    firstPage: async (limit) => (await store.list({ limit })).sessions.length,
    wholeList: () => listThrough(store),
    close: () => store.close(),
  };
}

/** `sessions` two-event sessions through the API (relaxed: seeding is not what is measured). */
async function seedThroughApi(store, sessions) {
  const chunk = 256; // concurrent appends share one commit (group commit): the fastest way in
  for (let start = 0; start < sessions; start += chunk) {
    const ids = [];
    for (let i = start; i < Math.min(sessions, start + chunk); i++) ids.push(sessionId('s', i));
    await Promise.all(
      ids.map(async (id, i) => {
        await store.create({ id, cwd: `/project/${(start + i) % 20}` });
        await store.append(id, batch(0, 2, true));
      }),
    );
  }
}

export const tidemarkSqlite = {
  name: 'tidemark sqlite',
  family: 'sqlite',
  settings: 'WAL, synchronous=FULL (durability strict)',
  async open(dir) {
    const store = await openSqliteStore({ path: join(dir, 'store.db') });
    return tidemarkHandle(store, this.settings);
  },
  async seedList(dir, sessions) {
    const path = join(dir, 'store.db');
    const seeding = await openSqliteStore({ path, durability: 'relaxed' });
    await seedThroughApi(seeding, sessions);
    await seeding.close();
    return this.open(dir);
  },
};

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS sessions (
    id TEXT NOT NULL PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, cwd TEXT,
    event_count INTEGER NOT NULL, committed_seq INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX IF NOT EXISTS sessions_by_updated ON sessions (updated_at DESC, id ASC);
  CREATE INDEX IF NOT EXISTS sessions_by_cwd ON sessions (cwd, updated_at DESC, id ASC);
  CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    type TEXT NOT NULL, time TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, seq)
  ) STRICT, WITHOUT ROWID;`;

function openRaw(path) {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.exec(SCHEMA);
  return db;
}

/** Prepared statements of the hand-written store; an append is one BEGIN IMMEDIATE … COMMIT. */
function statements(db) {
  const insertSession = db.prepare(
    'INSERT INTO sessions (id, created_at, updated_at, cwd, event_count, committed_seq) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const updateSession = db.prepare(
    'UPDATE sessions SET updated_at = ?, event_count = ?, committed_seq = ? WHERE id = ?',
  );
  const insertEvent = db.prepare(
    'INSERT INTO events (session_id, seq, type, time, data) VALUES (?, ?, ?, ?, ?)',
  );
  const append = db.transaction((id, events, updatedAt) => {
    const last = events[events.length - 1];
    const committed = last.type === 'turn/end' ? last.seq : -1;
    if (events[0].seq === 0) insertSession.run(id, updatedAt, updatedAt, '/work/bench', 0, -1);
    for (const e of events) insertEvent.run(id, e.seq, e.type, e.time, JSON.stringify(e.data));
    updateSession.run(updatedAt, last.seq + 1, committed, id);
  });
  return { insertSession, insertEvent, append };
}

function keysetPages(db) {
  const first = db.prepare(
    'SELECT id, created_at, updated_at, cwd, event_count, committed_seq FROM sessions ORDER BY updated_at DESC, id ASC LIMIT ?',
  );
  // The range on updated_at lets SQLite seek in sessions_by_updated instead of rescanning it from
  // the top on every page (a row value cannot mix DESC and ASC).
  const after = db.prepare(
    `SELECT id, created_at, updated_at, cwd, event_count, committed_seq FROM sessions
     WHERE updated_at <= ? AND (updated_at < ? OR id > ?) ORDER BY updated_at DESC, id ASC LIMIT ?`,
  );
  return {
    firstPage: async (limit) => first.all(limit).length,
    async wholeList() {
      let rows = first.all(PAGE);
      let seen = rows.length;
      while (rows.length === PAGE) {
        const last = rows[rows.length - 1];
        rows = after.all(last.updated_at, last.updated_at, last.id, PAGE);
        seen += rows.length;
      }
      return seen;
    },
  };
}

function rawHandle(db) {
  const st = statements(db);
  const load = db.prepare('SELECT seq, type, time, data FROM events WHERE session_id = ? ORDER BY seq');
  const settings = `${db.pragma('journal_mode', { simple: true })}, synchronous=${db.pragma('synchronous', { simple: true })} (2 = FULL)`;
  return {
    settings,
    async append(id, events) {
      st.append.immediate(id, events, new Date().toISOString());
    },
    async load(id) {
      const events = load
        .all(id)
        .map((r) => ({ seq: r.seq, type: r.type, time: r.time, data: JSON.parse(r.data) }));
      return events.length;
    },
    ...keysetPages(db),
    close: async () => db.close(),
  };
}

export const handSqlite = {
  name: 'hand-written better-sqlite3',
  family: 'sqlite',
  against: 'tidemark sqlite',
  async open(dir) {
    return rawHandle(openRaw(join(dir, 'raw.db')));
  },
  async seedList(dir, sessions) {
    const db = openRaw(join(dir, 'raw.db'));
    const st = statements(db);
    db.transaction(() => {
      for (let i = 0; i < sessions; i++) {
        const id = sessionId('s', i);
        const at = new Date(Date.parse(TIME) + i * 1000).toISOString();
        st.insertSession.run(id, TIME, at, `/project/${i % 20}`, 2, 1);
        for (const e of batch(0, 2, true))
          st.insertEvent.run(id, e.seq, e.type, e.time, JSON.stringify(e.data));
      }
    })();
    return rawHandle(db);
  },
};
