// The built binary between pipes and terminals: a reader that closes the pipe early ends the
// command quietly with status 0; progress is drawn on stderr only on a terminal (a pseudo-TTY from
// util-linux's `script`), never with --json or into a pipe; colour follows NO_COLOR/FORCE_COLOR.
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, inject, it } from 'vitest';
import { colourOn } from '../src/format.js';
import { isReaderGone } from '../src/terminal.js';
import { BIN, home, T, tidemark, useTempHome } from './run-cli.js';

const unavailable = inject('unavailable');
const hasScript = spawnSync('script', ['--version']).status === 0;

/** An export of one session of `count` events, far more than a pipe buffers (64 KiB). */
function bigExport(id: string, count: number): string {
  const lines: unknown[] = [
    {
      format: 'tidemark-export',
      version: 1,
      meta: { id, createdAt: T },
      summary: { updatedAt: T, eventCount: count },
    },
  ];
  for (let seq = 0; seq < count; seq++)
    lines.push({
      seq,
      type: seq === count - 1 ? 'turn/end' : 'user/message',
      time: T,
      data: seq === count - 1 ? null : { text: `message ${seq} ${'x'.repeat(200)}` },
    });
  return `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
}

const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** Runs `tidemark args...` on a pseudo-terminal; stdout and stderr both arrive in `output`. */
function onTerminal(args: string[], env: NodeJS.ProcessEnv = {}): { status: number; output: string } {
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  const result = spawnSync('script', ['-qec', command, '/dev/null'], {
    cwd: home(),
    env: { PATH: process.env.PATH, TIDEMARK_HOME: home(), TERM: 'xterm', ...env },
    input: '',
  });
  return { status: result.status ?? -1, output: result.stdout.toString('utf8') };
}

describe('a reader gone', () => {
  // Which failed writes to stdout end a command quietly: the reader went away (EPIPE on a pipe;
  // ECONNRESET on the socket pair a parent's piped stdio is on Linux, when unread output was left,
  // which the test below met in CI), never a real failure (a full disk, a closed descriptor).
  it('is EPIPE or ECONNRESET, and nothing else', () => {
    const failed = (code: string) => Object.assign(new Error(code), { code });
    expect(isReaderGone(failed('EPIPE'))).toBe(true);
    expect(isReaderGone(failed('ECONNRESET'))).toBe(true);
    for (const code of ['ENOSPC', 'EIO', 'EBADF', 'EAGAIN']) expect(isReaderGone(failed(code))).toBe(false);
    expect(isReaderGone(undefined)).toBe(false);
  });
});

describe.skipIf(unavailable.jsonl !== undefined)('a closed pipe', () => {
  useTempHome();

  // Guards the quiet end of `tidemark export ID | head -1`: no IO error, status 0.
  it('ends export quietly with status 0 when the reader closes stdout after the first line', async () => {
    expect(tidemark(['import'], { input: bigExport('big', 3000) }).status).toBe(0);
    const child = spawn(process.execPath, [BIN, 'export', 'big'], {
      cwd: home(),
      env: { PATH: process.env.PATH, TIDEMARK_HOME: home() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let first: string | undefined;
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.stdout.on('data', (chunk: Buffer) => {
      if (first !== undefined) return;
      first = chunk.toString('utf8').split('\n')[0];
      child.stdout.destroy(); // the reader goes away with the rest unread
    });
    const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal })),
    );
    expect(JSON.parse(first!)).toMatchObject({ format: 'tidemark-export', meta: { id: 'big' } });
    expect(stderr).toBe('');
    expect(exit).toEqual({ code: 0, signal: null });
  });

  it('ends quietly in a shell pipeline into head -1', () => {
    expect(tidemark(['import'], { input: bigExport('big', 3000) }).status).toBe(0);
    const result = spawnSync(
      'bash',
      [
        '--norc',
        '--noprofile',
        '-c',
        `${quote(process.execPath)} ${quote(BIN)} export big | head -1; echo "status=\${PIPESTATUS[0]}"`,
      ],
      { cwd: home(), env: { PATH: process.env.PATH, TIDEMARK_HOME: home() } },
    );
    const lines = result.stdout.toString('utf8').trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0]!)).toMatchObject({ format: 'tidemark-export' });
    expect(lines[1]).toBe('status=0');
    expect(result.stderr.toString('utf8')).toBe('');
  });
});

describe.skipIf(unavailable.jsonl !== undefined || unavailable.sqlite !== undefined || !hasScript)(
  'progress on stderr',
  () => {
    useTempHome();
    const seed = () => {
      for (const id of ['a', 'b']) expect(tidemark(['import'], { input: bigExport(id, 3) }).status).toBe(0);
    };

    it('is drawn on a terminal for verify --all, migrate and prune', () => {
      seed();
      const verify = onTerminal(['verify', '--all']);
      expect(verify.status).toBe(0);
      expect(verify.output).toMatch(/verifying jsonl:\S+… \d+\.\d s/);
      const migrate = onTerminal(['migrate', '--from', 'jsonl:sessions', '--to', 'sqlite:m.db']);
      expect(migrate.status).toBe(0);
      expect(migrate.output).toContain('100% 2/2 sessions');
      const prune = onTerminal(['prune']);
      expect(prune.status).toBe(0);
      expect(prune.output).toContain('finding sessions to prune…');
    });

    it('is never drawn with --json, even on a terminal', () => {
      seed();
      const verify = onTerminal(['verify', '--all', '--json']);
      expect(verify.output).not.toContain('verifying');
      expect(JSON.parse(verify.output).ok).toBe(true);
      const migrate = onTerminal(['migrate', '--from', 'jsonl:sessions', '--to', 'sqlite:m.db', '--json']);
      expect(migrate.output).not.toContain('%');
      expect(JSON.parse(migrate.output).sessions).toBe(2);
      expect(onTerminal(['prune', '--json']).output).not.toContain('prune…');
    });

    it('is never written into a pipe', () => {
      seed();
      for (const args of [
        ['verify', '--all'],
        ['migrate', '--from', 'jsonl:sessions', '--to', 'sqlite:m.db'],
        ['prune'],
      ]) {
        const run = tidemark(args);
        expect(run.status).toBe(0);
        expect(run.stderr).toBe('');
        expect(run.stdout).not.toContain('\u001b[');
      }
    });

    it('colours a terminal unless NO_COLOR or FORCE_COLOR=0 says otherwise', () => {
      seed();
      expect(onTerminal(['list']).output).toContain('\u001b[32mok');
      expect(onTerminal(['list'], { NO_COLOR: '1' }).output).not.toContain('\u001b[3');
      expect(onTerminal(['list'], { FORCE_COLOR: '0' }).output).not.toContain('\u001b[3');
      expect(tidemark(['list']).stdout).not.toContain('\u001b[');
    });
  },
);

describe('colourOn', () => {
  it('follows NO_COLOR first, then FORCE_COLOR, then the terminal', () => {
    expect(colourOn(true, {})).toBe(true);
    expect(colourOn(false, {})).toBe(false);
    expect(colourOn(true, { NO_COLOR: '1' })).toBe(false);
    expect(colourOn(true, { NO_COLOR: '' })).toBe(true);
    expect(colourOn(true, { NO_COLOR: '1', FORCE_COLOR: '1' })).toBe(false);
    expect(colourOn(false, { FORCE_COLOR: '1' })).toBe(true);
    expect(colourOn(true, { FORCE_COLOR: '0' })).toBe(false);
    expect(colourOn(true, { TERM: 'dumb' })).toBe(false);
  });
});
