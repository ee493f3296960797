// `tidemark trash` and the trash behind delete, prune and show: a trashed session is never left
// out or called absent because the trash store misbehaves, and a trash that is the store itself
// is refused.
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import {
  expectOneErrorLine,
  exportLines,
  home,
  openSqliteDatabase,
  tidemark,
  useTempHome,
} from './run-cli.js';

const unavailable = inject('unavailable');
useTempHome();

describe.skipIf(unavailable.sqlite !== undefined)('a trashed session the trash store cannot describe', () => {
  // Regression: trash list and purge silently skipped it (and list said "the trash is empty").
  it('list and purge report a trashed session the trash store cannot describe (exit 1), never omit it', () => {
    const store = `sqlite:${join(home(), 's.db')}`;
    for (const id of ['t1', 't2']) {
      expect(tidemark(['--store', store, 'import'], { input: exportLines(id, `hi ${id}`) }).status).toBe(0);
      expect(tidemark(['--store', store, 'delete', id]).status).toBe(0);
    }
    // Damage the summary row of t2 in the default trash beside a SQLite store.
    const db = openSqliteDatabase(join(home(), 'trash.db'));
    db.prepare(`UPDATE sessions SET tags = 'not json' WHERE id = 't2'`).run();
    db.close();

    const listed = tidemark(['--store', store, 'trash', 'list']);
    expect(listed.stdout).toContain('t1');
    expect(listed.stdout).not.toContain('the trash is empty');
    expect(listed.stderr).toMatch(/problem.*t2.*CORRUPT/);
    expect(listed.status).toBe(1);

    const json = tidemark(['--store', store, 'trash', 'list', '--json']);
    expect((JSON.parse(json.stdout) as { id: string }[]).map((e) => e.id)).toEqual(['t1']);
    expect(json.stderr).toMatch(/t2.*CORRUPT/);
    expect(json.status).toBe(1);

    const dry = tidemark(['--store', store, 'trash', 'purge', '--dry-run']);
    expect(dry.stderr).toMatch(/t2.*CORRUPT/);
    expect(dry.status).toBe(1);

    const purge = tidemark(['--store', store, 'trash', 'purge', '--json']);
    expect(JSON.parse(purge.stdout)).toMatchObject({ purged: [], problems: [{ id: 't2' }] });
    expect(purge.status).toBe(1);
  });
});

describe.skipIf(unavailable.sqlite !== undefined)('a trash store that cannot be opened', () => {
  // Regression: a session that may be in that trash was reported as NOT_FOUND "does not exist".
  it('still reports AUDITED_MISSING from the audit log, and otherwise its error, never "does not exist"', () => {
    const store = `sqlite:${join(home(), 's.db')}`;
    for (const id of ['lost', 'binned']) {
      expect(tidemark(['--store', store, 'import'], { input: exportLines(id) }).status).toBe(0);
    }
    expect(tidemark(['--store', store, 'delete', 'binned']).status).toBe(0);
    // The store loses 'lost' behind the CLI's back.
    const db = openSqliteDatabase(join(home(), 's.db'));
    db.prepare('DELETE FROM events WHERE session_id = ?').run('lost');
    db.prepare('DELETE FROM sessions WHERE id = ?').run('lost');
    db.close();
    expectOneErrorLine(tidemark(['--store', store, 'show', 'lost']), 'AUDITED_MISSING', 11);

    // A trash that cannot be opened (a directory where its database file should be).
    const broken = ['--store', store, '--trash', `sqlite:${home()}`];
    for (const command of ['show', 'export', 'verify', 'repair']) {
      const run = tidemark([...broken, command, 'lost']);
      expectOneErrorLine(run, 'AUDITED_MISSING', 11);
      expect(run.stderr).toContain('trash');
    }
    // 'binned' may be in that trash, 'never' too as far as anyone can tell: the failure to look
    // is the answer, not "does not exist".
    for (const id of ['binned', 'never']) {
      const run = tidemark([...broken, 'show', id]);
      expect(run.stderr).toMatch(/^tidemark: (IO|CORRUPT|UNAVAILABLE): [^\n]+\n$/);
      expect(run.stderr).not.toContain('does not exist');
      expect(run.status).not.toBe(3);
    }
    // With the trash back, the answers are the usual ones.
    expect(tidemark(['--store', store, 'show', 'binned']).stderr).toContain('in the trash');
    expectOneErrorLine(tidemark(['--store', store, 'show', 'never']), 'NOT_FOUND', 3);
  });
});

describe.skipIf(unavailable.jsonl !== undefined || unavailable.sqlite !== undefined)(
  'a trash that is the store itself',
  () => {
    // Regression: delete "moved" the session onto itself and then removed it for good.
    it('is refused (USAGE) instead of "moving" a session onto itself and then deleting it for good', () => {
      // The default trash of a JSONL store is jsonl:$TIDEMARK_HOME/trash: inspecting the trash as a
      // store with --store must not make delete destroy sessions without any grace period.
      for (const [store, trash] of [
        [`jsonl:${join(home(), 'trash')}`, undefined],
        [`jsonl:${join(home(), 'j')}`, `jsonl:${join(home(), 'j')}`],
        [`sqlite:${join(home(), 'trash.db')}`, undefined],
      ] as const) {
        const flags = ['--store', store, ...(trash === undefined ? [] : ['--trash', trash])];
        expect(tidemark([...flags, 'import'], { input: exportLines('d1', 'keep me') }).status).toBe(0);
        const run = tidemark([...flags, 'delete', 'd1']);
        expect(run.stderr).toMatch(/^tidemark: USAGE: \S/);
        expect(run.status).toBe(2);
        expect(tidemark([...flags, 'prune', '--older-than', '0', '--yes']).status).toBe(2);
        expect(tidemark([...flags, 'trash', 'purge']).status).toBe(2);
        // Reading the store stays allowed.
        expect(tidemark([...flags, 'verify']).status).toBe(0);
        const listed = JSON.parse(tidemark(['--store', store, 'list', '--json']).stdout) as {
          sessions: { id: string }[];
        };
        expect(listed.sessions.map((s) => s.id)).toEqual(['d1']);
      }
    });
  },
);
