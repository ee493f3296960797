// End-to-end tests of the built binary, as a user runs it: `node dist/bin.js ...` in a temporary
// TIDEMARK_HOME, with output captured from real pipes (not a TTY).
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  closeSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'bin.js');
const unavailable = inject('unavailable');
const T = (s: number) => `2026-01-01T00:00:${String(s).padStart(2, '0')}.000Z`;

// The global setup builds every backend the CLI loads; a backend that failed to build would skip
// the suites below, so this check turns that into a failure with the reason.
it('every backend the end-to-end tests use was built', () => {
  expect(unavailable).toEqual({});
});

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tidemark-cli-'));
});
afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

function tidemark(args: string[], input?: string, env: NodeJS.ProcessEnv = {}, asUser?: number): Run {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    input: input ?? '',
    cwd: asUser === undefined ? home : '/',
    env: { PATH: process.env.PATH, TIDEMARK_HOME: home, ...env },
    ...(asUser !== undefined && { uid: asUser, gid: asUser }),
  });
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** An export stream for a session: a finished turn, then an interrupted one. */
function exportText(id: string, cwd = '/proj', extra = 0): string {
  const events = [
    { seq: 0, type: 'turn/start', time: T(0), data: null },
    {
      seq: 1,
      type: 'user/message',
      time: T(1),
      data: { text: `please fix ${id}`, __proto__: 'data, not a prototype' },
    },
    {
      seq: 2,
      type: 'tool/call',
      time: T(2),
      data: { callId: 'c1', name: 'bash', input: { cmd: 'npm test' } },
    },
    { seq: 3, type: 'tool/result', time: T(3), data: { callId: 'c1', output: 'ok', unicode: 'é ✓ 🙂' } },
    { seq: 4, type: 'turn/end', time: T(4), data: null },
    { seq: 5, type: 'user/message', time: T(5), data: { text: 'and deploy' } },
  ];
  for (let i = 0; i < extra; i++)
    events.push({ seq: 6 + i, type: 'note', time: T(6), data: { text: `n${i}` } });
  const header = {
    format: 'tidemark-export',
    version: 1,
    meta: { id, createdAt: T(0), cwd },
    summary: { updatedAt: T(5), eventCount: events.length, title: `work on ${id}`, tags: ['e2e'] },
  };
  return [header, ...events].map((line) => JSON.stringify(line)).join('\n') + '\n';
}

function eventLines(exported: string): string[] {
  return exported.trimEnd().split('\n').slice(1);
}

function jsonlFiles(root: string): string[] {
  const out: string[] = [];
  for (const bucket of readdirSync(root)) {
    if (bucket.startsWith('.')) continue;
    for (const name of readdirSync(join(root, bucket)))
      if (name.endsWith('.jsonl')) out.push(join(root, bucket, name));
  }
  return out;
}

function expectOneErrorLine(run: Run, code: string, status: number): void {
  expect(run.status).toBe(status);
  const lines = run.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`^tidemark: ${code}: \\S`));
  expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
}

describe.skipIf(unavailable.jsonl !== undefined)(`tidemark on JSONL ${unavailable.jsonl ?? ''}`, () => {
  it('list, show and verify a log with a torn tail; repair quarantines it', () => {
    expect(tidemark(['import'], exportText('torn1')).status).toBe(0);
    const [file] = jsonlFiles(join(home, 'sessions'));
    const size = statSync(file!).size;
    // a crash mid-write: half a line, no newline
    appendFileSync(file!, '{"seq":6,"type":"assistant/mess');

    const verify = tidemark(['verify']);
    expect(verify.status).toBe(1);
    expect(verify.stdout).toContain(`torn torn1: torn tail of 31 byte(s)`);
    expect(verify.stdout).toContain(`${file}, byte ${size}`);
    expect(verify.stdout).toContain('interrupted torn1');

    const verifyJson = JSON.parse(tidemark(['verify', 'torn1', '--json']).stdout) as {
      ok: boolean;
      findings: { kind: string; location: { offset?: number } }[];
    };
    expect(verifyJson.ok).toBe(false);
    expect(verifyJson.findings.find((f) => f.kind === 'torn')?.location.offset).toBe(size);
    // verify is read-only: the torn bytes are still there
    expect(statSync(file!).size).toBe(size + 31);

    const list = tidemark(['list']);
    expect(list.status).toBe(0);
    expect(list.stdout).toMatch(/torn1\s+\S+ ago\s+6\s+interrupted\s+\/proj\s+work on torn1/);
    expect(list.stdout).not.toContain('\u001b['); // no colour on a pipe

    const show = tidemark(['show', 'torn1']);
    expect(show.status).toBe(0);
    expect(show.stdout).toContain('user: please fix torn1');
    expect(show.stdout).toContain('→ tool bash [c1] {"cmd":"npm test"}');
    expect(show.stdout).toContain('← result [c1] ok');
    expect(show.stdout).toContain('(interrupted: 1 event(s) after the last boundary at seq 4)');
    const shown = JSON.parse(tidemark(['show', 'torn1', '--json']).stdout) as {
      events: unknown[];
      interrupted: boolean;
    };
    expect(shown.events).toHaveLength(6);
    expect(shown.interrupted).toBe(true);

    const repair = tidemark(['repair', 'torn1']);
    expect(repair.status).toBe(0);
    expect(repair.stdout).toMatch(/quarantined 31 torn byte\(s\); 6 events kept; quarantine: \S+/);
    expect(statSync(file!).size).toBe(size);
    const after = tidemark(['verify']);
    expect(after.status).toBe(0);
    expect(after.stdout).toContain('ok: jsonl:');
    const audit = readFileSync(join(home, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { action: string });
    expect(audit.map((e) => e.action)).toEqual(['imported', 'repaired']);
    expect(statSync(join(home, 'audit.jsonl')).mode & 0o777).toBe(0o600);
  });

  it('reports corruption before the tail with its location and exit status', () => {
    tidemark(['import'], exportText('bad1'));
    const [file] = jsonlFiles(join(home, 'sessions'));
    const text = readFileSync(file!, 'utf8');
    const at = text.indexOf('please fix');
    writeFileSync(file!, `${text.slice(0, at)}PLEASE${text.slice(at + 6)}`); // flip bytes, same length
    const verify = tidemark(['verify', 'bad1']);
    expect(verify.status).toBe(1);
    expect(verify.stdout).toMatch(
      new RegExp(`corrupt bad1: .* at ${file!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, byte \\d+`),
    );
    const show = tidemark(['show', 'bad1']);
    expectOneErrorLine(show, 'CORRUPT', 7);
  });

  it('prune previews, spares the active session, and trash restore is byte-identical', () => {
    tidemark(['import'], exportText('keep1'));
    tidemark(['import'], exportText('old1'));
    const before = tidemark(['export', 'old1']).stdout;
    expect(tidemark(['active', 'keep1', '--cwd', '/proj']).status).toBe(0);

    const preview = tidemark(['prune', '--older-than', '0']);
    expect(preview.status).toBe(0);
    expect(preview.stdout).toContain('would move 1 session(s)');
    expect(preview.stdout).toContain('kept keep1: active session of a project');
    expect(tidemark(['list', '--json']).stdout).toContain('"old1"');

    const applied = tidemark(['prune', '--older-than', '0', '--yes', '--json']);
    expect(JSON.parse(applied.stdout)).toMatchObject({
      dryRun: false,
      trashed: ['old1'],
      keptActive: ['keep1'],
    });
    const listed = JSON.parse(tidemark(['list', '--json']).stdout) as { sessions: { id: string }[] };
    expect(listed.sessions.map((s) => s.id)).toEqual(['keep1']);
    expect(tidemark(['trash', 'list']).stdout).toMatch(/old1\s+\S+\s+pruned/);

    // gone from the store, but the CLI says where it is
    expectOneErrorLine(tidemark(['show', 'old1']), 'NOT_FOUND', 3);
    expect(tidemark(['show', 'old1']).stderr).toContain('is in the trash');

    expect(tidemark(['trash', 'purge']).stdout).toContain(
      'purged 0 session(s); 1 still within their grace period',
    );
    expect(tidemark(['trash', 'restore', 'old1']).status).toBe(0);
    expect(eventLines(tidemark(['export', 'old1']).stdout)).toEqual(eventLines(before));
    expect(tidemark(['trash', 'list']).stdout).toContain('the trash is empty');
  });

  it('migrate only reads the source: a torn tail there stays for verify and repair', () => {
    tidemark(['import'], exportText('src1'));
    const [file] = jsonlFiles(join(home, 'sessions'));
    appendFileSync(file!, '\u0000\u0000\u0000\u0000');
    const size = statSync(file!).size;
    const run = tidemark(['migrate', '--from', 'jsonl:sessions', '--to', 'jsonl:copy', '--json']);
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, copied: 1, events: 6 });
    expect(statSync(file!).size).toBe(size);
    expect(tidemark(['verify']).stdout).toContain('torn src1');
    expect(tidemark(['--store', 'jsonl:copy', 'verify']).status).toBe(0);
  });

  it('says "audited but missing" for a session the store lost', () => {
    tidemark(['import'], exportText('lost1'));
    for (const file of jsonlFiles(join(home, 'sessions'))) {
      rmSync(file);
      rmSync(file.replace(/\.jsonl$/, '.summary.json'), { force: true });
    }
    const show = tidemark(['show', 'lost1']);
    expectOneErrorLine(show, 'AUDITED_MISSING', 11);
    expect(show.stderr).toContain(`audited but missing from jsonl:${join(home, 'sessions')}`);
    expectOneErrorLine(tidemark(['show', 'never-existed']), 'NOT_FOUND', 3);
    const verify = tidemark(['verify']);
    expect(verify.status).toBe(1);
    expect(verify.stdout).toContain('missing lost1: session lost1: audited but missing from jsonl:');
  });
});

describe.skipIf(unavailable.jsonl !== undefined || unavailable.sqlite !== undefined)(
  `migrate JSONL → SQLite → JSONL ${unavailable.jsonl ?? ''} ${unavailable.sqlite ?? ''}`,
  () => {
    it('round trips byte-identical events, verifies, and resumes', () => {
      const ids = ['m1', 'm2', 'm3'];
      for (const [i, id] of ids.entries())
        expect(tidemark(['import'], exportText(id, `/p${i}`, i * 300)).status).toBe(0);
      const original = Object.fromEntries(ids.map((id) => [id, eventLines(tidemark(['export', id]).stdout)]));
      const sqlite = `sqlite:${join(home, 'm.db')}`;
      const back = `jsonl:${join(home, 'back')}`;

      // a migration cut short: m2 is already partly in the target
      const partial = exportText('m2', '/p1', 300).trimEnd().split('\n');
      const header = JSON.parse(partial[0]!) as { summary: { eventCount: number } };
      header.summary.eventCount = 3;
      const cut = `${[JSON.stringify(header), ...partial.slice(1, 4)].join('\n')}\n`;
      expect(tidemark(['--store', sqlite, 'import'], cut).status).toBe(0);

      const first = tidemark(['migrate', '--from', 'jsonl:sessions', '--to', sqlite, '--json']);
      expect(first.stderr).toBe(''); // no progress bar when stderr is not a TTY
      expect(first.status).toBe(0);
      expect(JSON.parse(first.stdout)).toMatchObject({
        ok: true,
        sessions: 3,
        copied: 2,
        resumed: 1,
        events: 6 + 306 + 606,
      });

      const again = JSON.parse(
        tidemark(['migrate', '--from', 'jsonl:sessions', '--to', sqlite, '--json']).stdout,
      );
      expect(again).toMatchObject({ ok: true, alreadyComplete: 3, copied: 0, resumed: 0 });

      const second = tidemark(['migrate', '--from', sqlite, '--to', back]);
      expect(second.status).toBe(0);
      expect(second.stdout).toContain('migrated 3 session(s), 918 events');
      for (const id of ids) {
        expect(eventLines(tidemark(['--store', sqlite, 'export', id]).stdout)).toEqual(original[id]);
        expect(eventLines(tidemark(['--store', back, 'export', id]).stdout)).toEqual(original[id]);
      }
      const backList = JSON.parse(tidemark(['--store', back, 'list', '--json']).stdout) as {
        sessions: { id: string; cwd: string; title: string }[];
      };
      expect(backList.sessions.map((s) => [s.id, s.cwd, s.title]).sort()).toEqual(
        ids.map((id, i) => [id, `/p${i}`, `work on ${id}`]),
      );
      expect(tidemark(['--store', back, 'verify']).status).toBe(0);
      const audit = readFileSync(join(home, 'audit.jsonl'), 'utf8');
      expect(audit.match(/"action":"migrated"/g)).toHaveLength(6);
    });
  },
);

describe.skipIf(unavailable.sqlite !== undefined)(`tidemark on SQLite ${unavailable.sqlite ?? ''}`, () => {
  it('verify locates a damaged event row; repair --drop-corrupt quarantines from it on, and the session goes on', () => {
    const file = join(home, 'r.db');
    const store = ['--store', `sqlite:${file}`];
    expect(tidemark([...store, 'import'], exportText('hurt')).status).toBe(0);
    expect(tidemark([...store, 'import'], exportText('fine')).status).toBe(0);
    const db = new Database(file);
    db.prepare(
      'UPDATE events SET data = \'{"text":"flipped"}\' WHERE session_id = \'hurt\' AND seq = 3',
    ).run();
    db.close();

    const verify = tidemark([...store, 'verify']);
    expect(verify.status).toBe(1);
    expect(verify.stdout).toMatch(/corrupt hurt: .*seq 3/);
    expectOneErrorLine(tidemark([...store, 'show', 'hurt']), 'CORRUPT', 7);
    // Without --drop-corrupt, repair removes nothing that is not torn or interrupted.
    expect(tidemark([...store, 'repair', 'hurt']).status).toBe(7);

    const repair = tidemark([...store, 'repair', 'hurt', '--drop-corrupt']);
    expect(repair.stderr).toBe('');
    expect(repair.status).toBe(0);
    expect(repair.stdout).toMatch(
      /^hurt: quarantined 3 event\(s\) from the first damaged one on; 3 events kept; quarantine: sqlite:\S+#quarantine\/session_id=hurt$/m,
    );
    const kept = new Database(file, { readonly: true });
    expect(
      kept.prepare("SELECT seq FROM quarantine WHERE session_id = 'hurt' ORDER BY seq").pluck().all(),
    ).toEqual([3, 4, 5]);
    kept.close();
    expect(tidemark([...store, 'verify']).status).toBe(0);
    const shown = JSON.parse(tidemark([...store, 'show', 'hurt', '--json']).stdout) as { events: unknown[] };
    expect(shown.events).toHaveLength(3);
    expect(eventLines(tidemark([...store, 'export', 'fine']).stdout)).toEqual(eventLines(exportText('fine')));
    const audit = readFileSync(join(home, 'audit.jsonl'), 'utf8').trim().split('\n');
    expect(JSON.parse(audit.at(-1)!)).toMatchObject({ action: 'repaired', id: 'hurt' });
  });

  it('repair --drop-corrupt sets unreadable summary fields aside, says so and audits it', () => {
    const file = join(home, 's.db');
    const store = ['--store', `sqlite:${file}`];
    expect(tidemark([...store, 'import'], exportText('tagged')).status).toBe(0);
    const db = new Database(file);
    db.prepare("UPDATE sessions SET tags = '[1' WHERE id = 'tagged'").run();
    db.close();
    expect(tidemark([...store, 'verify']).status).toBe(1);
    const repair = tidemark([...store, 'repair', 'tagged', '--drop-corrupt']);
    expect(repair.status).toBe(0);
    expect(repair.stdout).toMatch(
      /^tagged: quarantined unreadable summary fields \(tags, attrs\); 6 events kept; quarantine: sqlite:/m,
    );
    expect(tidemark([...store, 'verify']).status).toBe(0);
    const audit = readFileSync(join(home, 'audit.jsonl'), 'utf8').trim().split('\n');
    expect(JSON.parse(audit.at(-1)!)).toMatchObject({ action: 'repaired', id: 'tagged' });
  });

  it('refuses a row repair of damaged pages with CORRUPT and what to do instead', () => {
    const file = join(home, 'p.db');
    const store = ['--store', `sqlite:${file}`];
    expect(tidemark([...store, 'import'], exportText('paged', '/proj', 400)).status).toBe(0);
    const db = new Database(file);
    db.pragma('wal_checkpoint(TRUNCATE)');
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const root = db
      .prepare("SELECT rootpage FROM sqlite_schema WHERE name = 'events'")
      .pluck()
      .get() as number;
    db.close();
    // Trash the root page of the events b-tree (an interior page with 406 rows below it).
    const fd = openSync(file, 'r+');
    writeSync(fd, Buffer.alloc(512, 0xa5), 0, 512, (root - 1) * pageSize + 8);
    closeSync(fd);
    const run = tidemark([...store, 'repair', 'paged', '--drop-corrupt']);
    expectOneErrorLine(run, 'CORRUPT', 7);
    expect(run.stderr).toMatch(/restore a backup|\.recover/);
  });
});

// The harness command: harness-quick.test.ts runs it over every backend.

describe('errors and usage', () => {
  it('prints one line with a distinct non-zero status for each class', () => {
    expectOneErrorLine(tidemark(['--store', 'memory:', 'show', 'nope']), 'NOT_FOUND', 3);
    expectOneErrorLine(tidemark(['--store', 'nowhere', 'list']), 'USAGE', 2);
    expectOneErrorLine(tidemark(['frobnicate']), 'USAGE', 2);
    expectOneErrorLine(tidemark(['list', '--bogus-flag']), 'USAGE', 2);
    // A postgres:// address is served now; a server that refuses the connection is a storage fault.
    expectOneErrorLine(tidemark(['--store', 'postgres://127.0.0.1:1/x', 'list']), 'IO', 9);
    expectOneErrorLine(tidemark(['--store', 'memory:', 'show', '../etc']), 'INVALID', 6);
    expectOneErrorLine(
      tidemark(['--store', 'memory:', 'import'], '{"format":"tidemark-export","version":1'),
      'INVALID',
      6,
    );
  });

  it('reports a storage fault as IO, not as absence', () => {
    // a parent path that is a regular file: ENOTDIR even for root
    const file = join(home, 'plain-file');
    writeFileSync(file, 'x');
    const run = tidemark(['--store', `sqlite:${join(file, 'db.sqlite')}`, 'list']);
    expectOneErrorLine(run, 'IO', 9);
  });

  // Root is never denied by chmod; a real EACCES needs an unprivileged process.
  it.skipIf(process.getuid?.() !== 0 || unavailable.jsonl !== undefined)(
    'reports permission denied as IO, never as absence (as uid 65534)',
    () => {
      expect(tidemark(['import'], exportText('mine')).status).toBe(0);
      // the home is readable (so config.json is simply absent for nobody); the store dir is 0700
      chmodSync(home, 0o755);
      expect(statSync(join(home, 'sessions')).mode & 0o777).toBe(0o700);
      for (const args of [['list'], ['show', 'mine'], ['verify', 'mine'], ['export', 'mine']]) {
        const run = tidemark(args, undefined, {}, 65534);
        expectOneErrorLine(run, 'IO', 9);
        expect(run.stderr).toMatch(/EACCES|permission denied/i);
        expect(run.stderr).toContain(join(home, 'sessions'));
      }
      // and the session is still there for its owner
      expect(tidemark(['show', 'mine']).status).toBe(0);
    },
  );

  it('writes config.json 0600 and uses its default store', () => {
    expect(tidemark(['config', '--set-store', 'memory:']).status).toBe(0);
    expect(statSync(join(home, 'config.json')).mode & 0o777).toBe(0o600);
    expect(tidemark(['config', '--json']).stdout).toContain('"store": "memory:"');
    expect(tidemark(['list']).stdout).toContain('no sessions in memory:');
  });

  it('prints help and exits 0; no command exits 2', () => {
    const help = tidemark(['--help']);
    expect(help.status).toBe(0);
    for (const command of [
      'list',
      'show',
      'delete',
      'prune',
      'trash',
      'verify',
      'repair',
      'export',
      'import',
      'migrate',
      'harness',
    ]) {
      expect(help.stdout).toContain(`  ${command}`);
    }
    expect(tidemark([]).status).toBe(2);
  });
});
