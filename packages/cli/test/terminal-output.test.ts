// `main` run in-process with a fake terminal: what only a TTY shows (colours, the progress bar)
// and what NO_COLOR turns off.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { type Io, main } from '../src/index.js';

const unavailable = inject('unavailable');
let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tidemark-inproc-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

function fakeIo(
  tty: boolean,
  env: NodeJS.ProcessEnv,
  stdin = '',
): Io & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (t: string) => (out += t), isTTY: tty },
    stderr: { write: (t: string) => (err += t), isTTY: tty },
    stdin: (async function* () {
      yield Buffer.from(stdin);
    })(),
    env: { TIDEMARK_HOME: home, ...env },
    cwd: home,
    out: () => out,
    err: () => err,
  };
}

const exportStream = (id: string) =>
  [
    {
      format: 'tidemark-export',
      version: 1,
      meta: { id, createdAt: '2026-01-01T00:00:00.000Z' },
      summary: { updatedAt: '2026-01-01T00:00:00.000Z', eventCount: 2 },
    },
    { seq: 0, type: 'user/message', time: '2026-01-01T00:00:00.000Z', data: { text: 'hi' } },
    { seq: 1, type: 'turn/end', time: '2026-01-01T00:00:01.000Z', data: null },
  ]
    .map((l) => JSON.stringify(l))
    .join('\n');

describe.skipIf(unavailable.jsonl !== undefined || unavailable.sqlite !== undefined)('on a terminal', () => {
  it('colours only without NO_COLOR, and draws migrate progress on stderr', async () => {
    const sessions = `jsonl:${join(home, 'sessions')}`;
    for (const id of ['a', 'b']) {
      expect(await main(['--store', sessions, 'import'], fakeIo(false, {}, exportStream(id)))).toBe(0);
    }
    const coloured = fakeIo(true, {});
    expect(await main(['--store', sessions, 'list'], coloured)).toBe(0);
    expect(coloured.out()).toContain('\u001b[');

    const plain = fakeIo(true, { NO_COLOR: '1' });
    expect(await main(['--store', sessions, 'list'], plain)).toBe(0);
    expect(plain.out()).not.toContain('\u001b[');
    expect(plain.out()).toMatch(/^ID\s+UPDATED/);

    const migrate = fakeIo(true, { NO_COLOR: '1' });
    expect(await main(['migrate', '--from', sessions, '--to', `sqlite:${join(home, 'm.db')}`], migrate)).toBe(
      0,
    );
    expect(migrate.err()).toContain('[##############################] 100% 2/2 sessions');
    expect(migrate.out()).toContain('migrated 2 session(s), 4 events');
  });
});
