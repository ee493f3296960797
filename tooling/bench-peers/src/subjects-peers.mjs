// The published SQLite peers, each driven through its own API only:
//   SqliteSaver (@langchain/langgraph-checkpoint-sqlite): a session is a thread with one
//     checkpoint; an append is one putWrites of the batch (one pending write per event: the
//     smallest write LangGraph persists, one transaction), a load is getTuple, whose pendingWrites
//     carry the events. It has no listing of threads, so W4 is left out.
//   Emmett (@event-driven-io/emmett-sqlite on its own driver, node-sqlite3): a session is a
//     stream; an append is appendToStream, a load is readStream. No listing of streams either.
import { join } from 'node:path';
import { getSQLiteEventStore } from '@event-driven-io/emmett-sqlite';
import { emptyCheckpoint } from '@langchain/langgraph-checkpoint';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import Database from 'better-sqlite3';
import sqlite3 from 'sqlite3';

const thread = (id, checkpointId) => ({
  configurable: { thread_id: id, checkpoint_ns: '', ...(checkpointId && { checkpoint_id: checkpointId }) },
});

export const sqliteSaver = {
  name: 'LangGraph SqliteSaver',
  family: 'sqlite',
  against: 'tidemark sqlite',
  lacks: { W4: 'SqliteSaver lists checkpoints, not threads: it has no list of sessions' },
  async open(dir) {
    // Its own connection string would leave synchronous at better-sqlite3's NORMAL (no fsync per
    // commit); the saver takes a database, so it gets one raised to FULL, equal to tidemark strict.
    const db = new Database(join(dir, 'checkpoints.db'));
    db.pragma('synchronous = FULL');
    const saver = new SqliteSaver(db);
    saver.setup(); // sets journal_mode=WAL
    const checkpoints = new Map();
    return {
      settings: `${db.pragma('journal_mode', { simple: true })}, synchronous=${db.pragma('synchronous', { simple: true })} (2 = FULL; set by the bench, SqliteSaver's own default is 1 = NORMAL)`,
      async append(id, events) {
        if (!checkpoints.has(id)) {
          const checkpoint = emptyCheckpoint();
          await saver.put(thread(id), checkpoint, { source: 'input', step: -1, parents: {} });
          checkpoints.set(id, checkpoint.id);
        }
        const writes = events.map((e) => ['events', e]);
        await saver.putWrites(thread(id, checkpoints.get(id)), writes, `append-${events[0].seq}`);
      },
      load: async (id) => (await saver.getTuple(thread(id))).pendingWrites.length,
      close: async () => db.close(),
    };
  },
};

/** journal_mode and synchronous of a new node-sqlite3 connection, as Emmett opens one per call. */
function emmettSettings(path) {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(path);
    db.get('PRAGMA journal_mode', (e1, mode) => {
      db.get('PRAGMA synchronous', (e2, sync) => {
        db.close();
        if (e1 || e2) reject(e1 ?? e2);
        else
          resolve(`${mode.journal_mode}, synchronous=${sync.synchronous} (2 = FULL, node-sqlite3's default)`);
      });
    });
  });
}

/**
 * Emmett 0.38.5 opens a connection per call and does not wait for that connection's
 * `PRAGMA journal_mode = WAL` before its transaction, so now and then a COMMIT fails with
 * SQLITE_BUSY ("SQL statements in progress"), also with one call at a time. The transaction is
 * rolled back, so the bench retries the call, as an application would have to, and counts it.
 */
async function retried(work, counts) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (error?.code !== 'SQLITE_BUSY' || attempt >= 20) throw error;
      counts.retries++;
    }
  }
}

/** Emmett logs every failed transaction with console.log; the retried ones would bury the report. */
function quietRollbacks() {
  const original = console.log;
  console.log = (...args) => {
    if (args.length === 1 && typeof args[0]?.code === 'string' && args[0].code.startsWith('SQLITE_')) return;
    original(...args);
  };
  return () => {
    console.log = original;
  };
}

export const emmett = {
  name: 'Emmett SQLite event store',
  family: 'sqlite',
  against: 'tidemark sqlite',
  lacks: { W4: 'Emmett has no list of streams in its event store API' },
  serializedW5:
    'calls queued: concurrent appendToStream calls on one file store fail (SQLITE_MISUSE / SQLITE_BUSY: 0.38.5 shares one connection between calls and closes it after each)',
  async open(dir) {
    const path = join(dir, 'emmett.db');
    const store = getSQLiteEventStore({ fileName: path });
    const counts = { retries: 0 };
    const restore = quietRollbacks();
    // One call at a time (see serializedW5); sequential workloads never wait in this queue.
    let queue = Promise.resolve();
    const serial = (work) => {
      const run = queue.then(() => retried(work, counts));
      queue = run.catch(() => {});
      return run;
    };
    await serial(() => store.appendToStream('session-probe', [{ type: 'probe', data: {} }])); // schema
    return {
      settings: await emmettSettings(path),
      append: (id, events) =>
        serial(() =>
          store.appendToStream(
            `session-${id}`,
            events.map((e) => ({ type: e.type, data: { seq: e.seq, time: e.time, data: e.data } })),
          ),
        ),
      load: async (id) => (await serial(() => store.readStream(`session-${id}`))).events.length,
      report: () => ({ retries: counts.retries }),
      async close() {
        await queue;
        restore();
      },
    };
  },
};
