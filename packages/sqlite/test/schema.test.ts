import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../src/index.js';
import { migrate, SQLITE_APPLICATION_ID, SQLITE_SCHEMA_VERSION } from '../src/schema.js';
import { events, expectNoDamage, rejectsWith, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

/** Another program's database in rollback-journal mode, as it would hand one to us. */
function otherProgramsDatabase(path: string, userVersion: number, applicationId: number): Buffer {
  const db = new Database(path);
  db.exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('mine')`);
  db.pragma(`user_version = ${userVersion}`);
  db.pragma(`application_id = ${applicationId}`);
  db.close();
  return readFileSync(path);
}

describe('a refused database is left untouched', () => {
  it.each([
    ['another application_id', 3, 0x12345678],
    ['a newer tidemark user_version', SQLITE_SCHEMA_VERSION + 1, SQLITE_APPLICATION_ID],
    ['a user_version without an application_id', 1, 0],
    ['tables of its own and no header at all', 0, 0],
  ])(
    '%s: UNSUPPORTED_FORMAT naming the file, same bytes, still rollback-journal mode',
    async (_, uv, appId) => {
      const path = join(tempDir(), 'other.db');
      const before = otherProgramsDatabase(path, uv, appId);
      expect([before[18], before[19]]).toEqual([1, 1]); // header: rollback journal
      const error = await rejectsWith(openSqliteStore({ path }), 'UNSUPPORTED_FORMAT');
      if (appId !== SQLITE_APPLICATION_ID) expect(error.message).toContain(path);
      const after = readFileSync(path);
      expect([after[18], after[19]]).toEqual([1, 1]); // not switched to WAL
      expect(after.equals(before)).toBe(true);
      expect(existsSync(`${path}-wal`)).toBe(false);
      const check = new Database(path, { readonly: true });
      expect(check.pragma('application_id', { simple: true })).toBe(appId);
      expect(check.prepare('SELECT body FROM notes').pluck().all()).toEqual(['mine']);
      check.close();
    },
  );
});

describe('migrate', () => {
  it('creates STRICT tables and the list indexes, once', () => {
    const db = new Database(join(tempDir(), 'a.db'));
    migrate(db, 'a.db');
    migrate(db, 'a.db');
    expect(db.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION);
    expect(db.pragma('application_id', { simple: true })).toBe(SQLITE_APPLICATION_ID);
    const tables = db
      .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY name")
      .all() as {
      name: string;
      sql: string;
    }[];
    expect(tables.map((t) => t.name)).toEqual(['events', 'quarantine', 'sessions']);
    for (const table of tables) expect(table.sql).toMatch(/\)\s*STRICT(, WITHOUT ROWID)?$/);
    const plan = db
      .prepare(
        'EXPLAIN QUERY PLAN SELECT id, updated_at FROM sessions ORDER BY updated_at DESC, id ASC LIMIT 10',
      )
      .all() as { detail: string }[];
    expect(plan.map((p) => p.detail).join(' ')).toContain('sessions_by_updated');
    expect(plan.map((p) => p.detail).join(' ')).not.toContain('TEMP B-TREE');
    db.close();
  });

  it('rolls a failed migration back whole', () => {
    const db = new Database(join(tempDir(), 'b.db'));
    let headerSteps = 0;
    // Fails after the tables were created, when the version is about to be stamped.
    const failLate = (name: string) => {
      if (name === 'PRAGMA user_version' && ++headerSteps === 3) throw new Error('injected');
    };
    expect(() => migrate(db, 'b.db', failLate)).toThrow('injected');
    expect(db.pragma('user_version', { simple: true })).toBe(0);
    expect(db.prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'sessions'").pluck().get()).toBe(0);
    expect(db.inTransaction).toBe(false);
    db.close();
  });

  it('refuses a newer database with UNSUPPORTED_FORMAT and leaves it untouched', async () => {
    const path = join(tempDir(), 'newer.db');
    const store = await openSqliteStore({ path });
    await store.create({ id: 's' });
    await store.append('s', events(0, 2));
    await store.close();
    const db = new Database(path);
    db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION + 1}`);
    db.close();
    await rejectsWith(openSqliteStore({ path }), 'UNSUPPORTED_FORMAT');
    const check = new Database(path);
    expect(check.prepare('SELECT count(*) FROM events').pluck().get()).toBe(2);
    check.close();
  });

  it('refuses a database of another application', async () => {
    const path = join(tempDir(), 'foreign.db');
    const db = new Database(path);
    db.pragma('application_id = 7');
    db.exec('CREATE TABLE t (x)');
    db.close();
    await rejectsWith(openSqliteStore({ path }), 'UNSUPPORTED_FORMAT');
  });

  it('separate processes opening fresh files at the same instant all open them (none is taken for foreign)', async () => {
    const dir = tempDir();
    const files = 25;
    const start = Date.now() + 800; // every child has loaded by then
    const script = `
      const { openSqliteStore } = await import(${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)});
      const out = [];
      for (let i = 0; i < ${files}; i++) {
        const at = ${start} + i * 30;
        while (Date.now() < at) await new Promise((r) => setTimeout(r, 1));
        out.push(await openSqliteStore({ path: ${JSON.stringify(dir)} + '/f' + i + '.db' }).then(
          async (s) => { await s.close(); return 'ok'; },
          (e) => e.code + ': ' + e.message,
        ));
      }
      console.log(JSON.stringify(out));
    `;
    const run = () =>
      new Promise<string[]>((resolve, reject) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => {
          stdout += c.toString();
        });
        child.stderr.on('data', (c: Buffer) => {
          stderr += c.toString();
        });
        child.on('close', (code) =>
          code === 0 ? resolve(JSON.parse(stdout) as string[]) : reject(new Error(stderr)),
        );
      });
    const results = await Promise.all([run(), run(), run(), run()]);
    for (const result of results) expect(result).toEqual(Array.from({ length: files }, () => 'ok'));
  }, 60_000);

  it('lets two processes worth of openers race on a fresh file', async () => {
    const path = join(tempDir(), 'race.db');
    const stores = await Promise.all([
      openSqliteStore({ path }),
      openSqliteStore({ path }),
      openSqliteStore({ path }),
    ]);
    await stores[0]!.create({ id: 's' });
    await stores[0]!.append('s', events(0, 1));
    expect(await stores[2]!.has('s')).toBe(true);
    for (const store of stores) await store.close();
  });
});

describe('opening while another process holds the locks', () => {
  // Guards: open retries a BUSY migration from outside the transaction a failed ROLLBACK left open.
  it('a BUSY migration COMMIT whose ROLLBACK also failed is retried from outside the transaction', async () => {
    const path = join(tempDir(), 'store.db');
    let busy = true;
    let rollback = true;
    const store = await openSqliteStore({
      path,
      busyTimeoutMs: 2000,
      beforeStorageStep(step) {
        if (step === 'COMMIT' && busy) {
          busy = false;
          throw Object.assign(new Error('database is locked'), { name: 'SqliteError', code: 'SQLITE_BUSY' });
        }
        if (step === 'ROLLBACK' && rollback) {
          rollback = false;
          throw Object.assign(new Error('disk I/O error'), { name: 'SqliteError', code: 'SQLITE_IOERR' });
        }
      },
    });
    expect(busy).toBe(false); // the fault was met
    await store.create({ id: 's' });
    expect(await store.append('s', events(0, 1, 1))).toEqual({ nextSeq: 1 });
    await store.close();
    await expectNoDamage(path);
  });
});
