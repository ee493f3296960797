// Second CLI review, run through the built binary as a user runs it: each test shows a bug that
// was fixed in src.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'bin.js');
const unavailable = inject('unavailable');
// better-sqlite3 is a dependency of @tidemark/sqlite, not of the CLI: load it from there.
const requireFromSqlite = createRequire(
  createRequire(import.meta.url).resolve('@tidemark/sqlite/package.json'),
);

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tidemark-cli-review2-'));
});
afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

function tidemark(args: string[], options: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    input: options.input ?? '',
    cwd: options.cwd ?? home,
    env: { PATH: process.env.PATH, TIDEMARK_HOME: home, ...options.env },
  });
  return {
    status: result.status ?? -1,
    stdout: result.stdout.toString('utf8'),
    stderr: result.stderr.toString('utf8'),
  };
}

/** An expected failure: exactly one line `tidemark: CODE: message` on stderr, and its status. */
function expectOneErrorLine(run: ReturnType<typeof tidemark>, code: string, status: number): void {
  expect(run.stderr).toMatch(new RegExp(`^tidemark: ${code}: \\S[^\\n]*\\n$`));
  expect(run.status).toBe(status);
}

const T = '2026-01-01T00:00:00.000Z';
function exportLines(id: string): string {
  return [
    {
      format: 'tidemark-export',
      version: 1,
      meta: { id, createdAt: T },
      summary: { updatedAt: T, eventCount: 2 },
    },
    { seq: 0, type: 'user/message', time: T, data: { text: 'hi' } },
    { seq: 1, type: 'turn/end', time: T, data: null },
  ]
    .map((l) => JSON.stringify(l))
    .join('\n')
    .concat('\n');
}

describe('expected failures are one line', () => {
  it('a multi-line option error from the argument parser (list --limit -1) is one line, exit 2', () => {
    expectOneErrorLine(tidemark(['list', '--limit', '-1']), 'USAGE', 2);
  });

  it('--limit that is not a positive integer is USAGE, not INVALID from the store', () => {
    for (const limit of ['0', '1.5', '-1']) {
      const run = tidemark(['--store', 'memory:', 'list', `--limit=${limit}`]);
      expectOneErrorLine(run, 'USAGE', 2);
      expect(run.stderr).toContain('--limit');
    }
    expect(tidemark(['--store', 'memory:', 'list', '--limit', '3']).status).toBe(0);
  });

  it('prune --older-than beyond any valid date is USAGE naming the option, not INTERNAL', () => {
    for (const days of ['1000000000', '1e15']) {
      const run = tidemark(['--store', 'memory:', 'prune', '--older-than', days]);
      expectOneErrorLine(run, 'USAGE', 2);
      expect(run.stderr).toContain('--older-than');
    }
    // Large but meaningful values still work.
    const ok = tidemark(['--store', 'memory:', 'prune', '--older-than', '36500', '--json']);
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ dryRun: true, toTrash: [] });
  });
});

describe('import', () => {
  it('an export header without a version is INVALID naming the field, not "version undefined is newer"', () => {
    const [header, ...events] = exportLines('v1').split('\n');
    const unversioned = JSON.stringify({ ...JSON.parse(header!), version: undefined });
    const run = tidemark(['--store', 'memory:', 'import'], { input: [unversioned, ...events].join('\n') });
    expectOneErrorLine(run, 'INVALID', 6);
    expect(run.stderr).toContain('"version"');
    expect(run.stderr).not.toContain('newer');
  });
});

describe.skipIf(unavailable.jsonl !== undefined || unavailable.sqlite !== undefined)(
  'store addresses',
  () => {
    it('expand ~/ to $HOME (sqlite:~/s.db, migrate --from jsonl:~/sessions) instead of creating ./~/', () => {
      const userHome = join(home, 'me');
      const work = join(home, 'work');
      mkdirSync(userHome);
      mkdirSync(work);
      const env = { HOME: userHome };
      const imported = tidemark(['--store', 'sqlite:~/s.db', 'import'], {
        input: exportLines('t1'),
        cwd: work,
        env,
      });
      expect(imported.status).toBe(0);
      expect(existsSync(join(userHome, 's.db'))).toBe(true);
      expect(existsSync(join(work, '~'))).toBe(false);
      const migrated = tidemark(
        ['migrate', '--from', 'sqlite:~/s.db', '--to', 'jsonl:~/sessions', '--json'],
        {
          cwd: work,
          env,
        },
      );
      expect(migrated.status).toBe(0);
      expect(JSON.parse(migrated.stdout)).toMatchObject({
        from: `sqlite:${join(userHome, 's.db')}`,
        to: `jsonl:${join(userHome, 'sessions')}`,
        copied: 1,
      });
      const listed = tidemark(['--store', 'jsonl:~/sessions', 'list', '--json'], { cwd: work, env });
      expect(JSON.parse(listed.stdout).sessions.map((s: { id: string }) => s.id)).toEqual(['t1']);
      expect(existsSync(join(work, '~'))).toBe(false);
    });
  },
);

describe.skipIf(unavailable.sqlite !== undefined)('config --set-store', () => {
  it('stores a relative address resolved, so every directory uses the same store', () => {
    const proj = join(home, 'proj');
    const other = join(home, 'other');
    mkdirSync(proj);
    mkdirSync(other);
    const set = tidemark(['config', '--set-store', 'sqlite:data.db'], { cwd: proj });
    expect(set.status).toBe(0);
    const store = `sqlite:${join(proj, 'data.db')}`;
    expect(JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'))).toEqual({ store });
    expect(tidemark(['import'], { input: exportLines('c1'), cwd: proj }).status).toBe(0);
    const listed = tidemark(['list', '--json'], { cwd: other });
    expect(listed.status).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({ store, sessions: [{ id: 'c1' }] });
    expect(tidemark(['show', 'c1'], { cwd: other }).status).toBe(0);
    expect(existsSync(join(other, 'data.db'))).toBe(false);
  });

  it('keeps a postgres URL as typed (its display form hides the password)', () => {
    const url = 'postgres://u:secret@db.example/sessions';
    expect(tidemark(['config', '--set-store', url]).status).toBe(0);
    expect(JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'))).toEqual({ store: url });
  });
});

describe.skipIf(unavailable.sqlite !== undefined)('a trash store that cannot be opened', () => {
  it('still reports AUDITED_MISSING from the audit log, and otherwise its error, never "does not exist"', () => {
    const store = `sqlite:${join(home, 's.db')}`;
    for (const id of ['lost', 'binned']) {
      expect(tidemark(['--store', store, 'import'], { input: exportLines(id) }).status).toBe(0);
    }
    expect(tidemark(['--store', store, 'delete', 'binned']).status).toBe(0);
    // The store loses 'lost' behind the CLI's back.
    const Database = requireFromSqlite('better-sqlite3') as new (
      file: string,
    ) => { prepare(sql: string): { run(...args: unknown[]): unknown }; close(): void };
    const db = new Database(join(home, 's.db'));
    db.prepare('DELETE FROM events WHERE session_id = ?').run('lost');
    db.prepare('DELETE FROM sessions WHERE id = ?').run('lost');
    db.close();
    expectOneErrorLine(tidemark(['--store', store, 'show', 'lost']), 'AUDITED_MISSING', 11);

    // A trash that cannot be opened (a directory where its database file should be).
    const broken = ['--store', store, '--trash', `sqlite:${home}`];
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
