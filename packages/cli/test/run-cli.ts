// Running the built binary as a user runs it, for the tests of one command's behaviour: a fresh
// TIDEMARK_HOME per test, output captured from real pipes (not a TTY), small export streams.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, expect } from 'vitest';

/** The built `tidemark` executable. */
export const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'bin.js');

let currentHome: string | undefined;

/** Gives every test of the enclosing suite its own empty TIDEMARK_HOME, removed afterwards. */
export function useTempHome(): void {
  beforeEach(async () => {
    currentHome = await mkdtemp(join(tmpdir(), 'tidemark-cli-'));
  });
  afterEach(() => {
    if (currentHome !== undefined) rmSync(currentHome, { recursive: true, force: true });
    currentHome = undefined;
  });
}

/** The TIDEMARK_HOME of the running test (see {@link useTempHome}). */
export function home(): string {
  if (currentHome === undefined) throw new Error('useTempHome() was not called for this suite');
  return currentHome;
}

/** The outcome of one run of the binary. */
export interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs `tidemark args...` in the test's home (or `cwd`), with `input` on stdin. */
export function tidemark(
  args: string[],
  options: { input?: string | Buffer; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Run {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    input: options.input ?? '',
    cwd: options.cwd ?? home(),
    env: { PATH: process.env.PATH, TIDEMARK_HOME: home(), ...options.env },
  });
  return {
    status: result.status ?? -1,
    stdout: result.stdout.toString('utf8'),
    stderr: result.stderr.toString('utf8'),
  };
}

/** An expected failure: exactly one line `tidemark: CODE: message` on stderr, and its status. */
export function expectOneErrorLine(run: Run, code: string, status: number): void {
  expect(run.stderr).toMatch(new RegExp(`^tidemark: ${code}: \\S[^\\n]*\\n$`));
  expect(run.status).toBe(status);
}

/** The creation and update time of every session {@link exportLines} makes. */
export const T = '2026-01-01T00:00:00.000Z';

/** The export of a finished one-turn session: a user message with `text`, then the turn's end. */
export function exportLines(id: string, text = 'hi'): string {
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

/** A SQLite database opened with better-sqlite3, to damage a store behind the CLI's back. */
export interface SqliteDatabase {
  prepare(sql: string): { run(...args: unknown[]): unknown };
  close(): void;
}

/** Opens `file` with better-sqlite3 (a dependency of @tidemark/sqlite, loaded from there). */
export function openSqliteDatabase(file: string): SqliteDatabase {
  const requireFromSqlite = createRequire(
    createRequire(import.meta.url).resolve('@tidemark/sqlite/package.json'),
  );
  const Database = requireFromSqlite('better-sqlite3') as new (file: string) => SqliteDatabase;
  return new Database(file);
}
