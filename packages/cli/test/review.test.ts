// Review findings, run through the built binary as a user runs it: each test shows a bug that was
// fixed in src.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';

// better-sqlite3 is a dependency of @tidemark/sqlite, not of the CLI: load it from there.
const requireFromSqlite = createRequire(
  createRequire(import.meta.url).resolve('@tidemark/sqlite/package.json'),
);

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'bin.js');
const unavailable = inject('unavailable');

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tidemark-cli-review-'));
});
afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

function tidemark(args: string[], input: string | Buffer = '') {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    input,
    cwd: home,
    env: { PATH: process.env.PATH, TIDEMARK_HOME: home },
  });
  return {
    status: result.status ?? -1,
    stdout: result.stdout.toString('utf8'),
    stderr: result.stderr.toString('utf8'),
  };
}

const T = '2026-01-01T00:00:00.000Z';
function exportLines(id: string, text: string): string {
  return [
    {
      format: 'tidemark-export',
      version: 1,
      meta: { id, createdAt: T },
      summary: { updatedAt: T, eventCount: 2 },
    },
    { seq: 0, type: 'user/message', time: T, data: { text } },
    { seq: 1, type: 'turn/end', time: T, data: null },
  ]
    .map((l) => JSON.stringify(l))
    .join('\n')
    .concat('\n');
}

describe.skipIf(unavailable.sqlite !== undefined)('import', () => {
  it('rejects a stream that is not valid UTF-8 instead of storing replacement characters', () => {
    const store = `sqlite:${join(home, 's.db')}`;
    const text = Buffer.from(exportLines('u1', 'caf\u00e9 XX'), 'utf8');
    // Replace "XX" with two bytes that are not UTF-8 (a lone continuation byte and 0xff).
    const at = text.indexOf('XX');
    text[at] = 0x80;
    text[at + 1] = 0xff;
    const run = tidemark(['--store', store, 'import'], text);
    expect(run.stderr).toMatch(/^tidemark: INVALID: \S/);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.status).toBe(6);
    const listed = JSON.parse(tidemark(['--store', store, 'list', '--json']).stdout) as {
      sessions: unknown[];
    };
    expect(listed.sessions).toEqual([]);
    // The same stream, valid, imports.
    expect(tidemark(['--store', store, 'import'], exportLines('u1', 'caf\u00e9 ok')).status).toBe(0);
  });
});

describe.skipIf(unavailable.sqlite !== undefined)('trash', () => {
  it('list and purge report a trashed session the trash store cannot describe (exit 1), never omit it', () => {
    const store = `sqlite:${join(home, 's.db')}`;
    for (const id of ['t1', 't2']) {
      expect(tidemark(['--store', store, 'import'], exportLines(id, `hi ${id}`)).status).toBe(0);
      expect(tidemark(['--store', store, 'delete', id]).status).toBe(0);
    }
    // Damage the summary row of t2 in the default trash beside a SQLite store.
    const Database = requireFromSqlite('better-sqlite3') as new (
      file: string,
    ) => { prepare(sql: string): { run(): unknown }; close(): void };
    const db = new Database(join(home, 'trash.db'));
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

describe.skipIf(unavailable.sqlite !== undefined || !existsSync('/dev/full'))('stdout that fails', () => {
  it('export to a full disk is one IO line and exit 9, not a stack trace and not success', () => {
    const store = `sqlite:${join(home, 's.db')}`;
    expect(tidemark(['--store', store, 'import'], exportLines('f1', 'x'.repeat(200_000))).status).toBe(0);
    const full = openSync('/dev/full', 'w');
    try {
      const result = spawnSync(process.execPath, [BIN, '--store', store, 'export', 'f1'], {
        stdio: ['ignore', full, 'pipe'],
        cwd: home,
        env: { PATH: process.env.PATH, TIDEMARK_HOME: home },
      });
      const stderr = result.stderr.toString('utf8');
      expect(stderr).not.toMatch(/\n\s+at /);
      expect(stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(stderr).toMatch(/^tidemark: IO: .*ENOSPC/);
      expect(result.status).toBe(9);
    } finally {
      closeSync(full);
    }
  });
});

describe.skipIf(unavailable.sqlite !== undefined)('import keeps the meta of the export', () => {
  it('the imported session has the exported createdAt, so export → import round-trips', () => {
    const store = `sqlite:${join(home, 's.db')}`;
    expect(tidemark(['--store', store, 'import'], exportLines('c1', 'hello')).status).toBe(0);
    const listed = JSON.parse(tidemark(['--store', store, 'list', '--json']).stdout) as {
      sessions: { id: string; createdAt: string }[];
    };
    expect(listed.sessions.map((s) => [s.id, s.createdAt])).toEqual([['c1', T]]);
    const header = JSON.parse(tidemark(['--store', store, 'export', 'c1']).stdout.split('\n')[0]!) as {
      meta: { createdAt: string };
    };
    expect(header.meta.createdAt).toBe(T);
  });
});

describe.skipIf(unavailable.sqlite !== undefined || unavailable.jsonl !== undefined)('migrate', () => {
  it('does not announce a session it failed to copy as migrated and verified', () => {
    const from = `sqlite:${join(home, 's.db')}`;
    expect(tidemark(['--store', from, 'import'], exportLines('m1', 'one')).status).toBe(0);
    expect(tidemark(['--store', from, 'import'], exportLines('m2', 'two')).status).toBe(0);
    // The target lies under a regular file: every copy fails with IO.
    writeFileSync(join(home, 'plain'), 'not a directory');
    const run = tidemark(['migrate', '--from', from, '--to', `jsonl:${join(home, 'plain', 'x')}`]);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/failed: m1: IO/);
    expect(run.stdout).not.toContain('migrated 2 session(s)');
    expect(run.stdout).toContain('migrated 0 of 2 session(s)');
  });

  it('refuses a source store that does not exist instead of creating it and copying nothing', () => {
    for (const from of [`sqlite:${join(home, 'typo.db')}`, `jsonl:${join(home, 'typo-dir')}`]) {
      const run = tidemark(['migrate', '--from', from, '--to', `jsonl:${join(home, 'target')}`]);
      expect(run.status).toBe(3);
      expect(run.stderr.trim()).toBe(`tidemark: NOT_FOUND: store ${from} does not exist`);
      expect(existsSync(join(home, 'typo.db'))).toBe(false);
      expect(existsSync(join(home, 'typo-dir'))).toBe(false);
    }
  });
});

describe.skipIf(unavailable.sqlite !== undefined)('import of a malformed header', () => {
  it('rejects an eventCount or version that is not a count, instead of skipping the truncation check', () => {
    const store = `sqlite:${join(home, 's.db')}`;
    const lines = exportLines('h1', 'x').split('\n');
    const header = JSON.parse(lines[0]!) as { version: unknown; summary: { eventCount: unknown } };
    // A truncated stream (one event of the announced two), its count given as a string.
    const truncated = [
      JSON.stringify({ ...header, summary: { ...header.summary, eventCount: '2' } }),
      lines[1],
      '',
    ].join('\n');
    const run = tidemark(['--store', store, 'import'], truncated);
    expect(run.stderr).toMatch(/^tidemark: INVALID: .*eventCount/);
    expect(run.status).toBe(6);
    const badVersion = [JSON.stringify({ ...header, version: 0.5 }), ...lines.slice(1)].join('\n');
    const second = tidemark(['--store', store, 'import'], badVersion);
    expect(second.stderr).toMatch(/^tidemark: INVALID: .*version/);
    expect(second.status).toBe(6);
    const listed = JSON.parse(tidemark(['--store', store, 'list', '--json']).stdout) as {
      sessions: unknown[];
    };
    expect(listed.sessions).toEqual([]);
  });
});

describe.skipIf(unavailable.jsonl !== undefined || unavailable.sqlite !== undefined)(
  'a trash that is the store itself',
  () => {
    it('is refused (USAGE) instead of "moving" a session onto itself and then deleting it for good', () => {
      // The default trash of a JSONL store is jsonl:$TIDEMARK_HOME/trash: inspecting the trash as a
      // store with --store must not make delete destroy sessions without any grace period.
      for (const [store, trash] of [
        [`jsonl:${join(home, 'trash')}`, undefined],
        [`jsonl:${join(home, 'j')}`, `jsonl:${join(home, 'j')}`],
        [`sqlite:${join(home, 'trash.db')}`, undefined],
      ] as const) {
        const flags = ['--store', store, ...(trash === undefined ? [] : ['--trash', trash])];
        expect(tidemark([...flags, 'import'], exportLines('d1', 'keep me')).status).toBe(0);
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
