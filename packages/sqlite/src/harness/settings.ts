// The effective engine settings of a SQLite store, checked on the connection the store really uses.
// No fault the harness injects can tell synchronous=NORMAL from FULL (a SIGKILL keeps the OS page
// cache, and the error sweep fails statements, not syncs), so a store that opens weaker than its
// durability mode promises passed every other cell. This check reads the pragmas back from the
// store's own connection, after open, at every COMMIT of an append and after the appends.
import { existsSync, promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { JsonObject, SessionStore } from '@tidemark/core';
import type { EngineCheckSuite, ServerFaultContext } from '@tidemark/faults';
import { builtFile, Checker, sessionId, workloadEvent } from '@tidemark/faults';

/** A durability mode of contract §4 (`StoreOptions.durability`). */
export type DurabilityMode = 'strict' | 'relaxed';

/** How the SQLite checks open a store, in this process and in a traced child process. */
export interface SqliteOpenSpec {
  /** Module the store factory is imported from, in this process and in a child (a file URL, or a name the child resolves). */
  module: string;
  /** Name of the async factory exported by `module`. */
  factory: string;
  /**
   * The factory's options (JSON: they cross a process boundary) for a file and a durability mode;
   * `undefined`: no durability option, as a user who passes none opens the store.
   */
  options(path: string, durability: DurabilityMode | undefined): JsonObject;
}

/** `@tidemark/sqlite` as the SQLite checks open it: this package's built entry, in any process. */
export const SQLITE_OPEN_SPEC: SqliteOpenSpec = {
  module: pathToFileURL(builtFile(import.meta.url, 'index.js')).href,
  factory: 'openSqliteStore',
  options: (path, durability) => ({ path, ...(durability !== undefined && { durability }) }),
};

/** Opens a store of `spec` at `path` in this process. */
export async function openFromSpec(
  spec: SqliteOpenSpec,
  path: string,
  durability: DurabilityMode | undefined,
  extra: JsonObject = {},
): Promise<SessionStore> {
  const mod = (await import(spec.module)) as Record<string, (o: JsonObject) => Promise<SessionStore>>;
  const open = mod[spec.factory];
  if (typeof open !== 'function') throw new Error(`${spec.module} has no export ${spec.factory}`);
  return open({ ...spec.options(path, durability), ...extra });
}

/** A scratch directory on tmpfs when there is one: the checks sync a lot and test nothing about the disk. */
export async function scratchDir(prefix: string): Promise<string> {
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  return fsp.mkdtemp(join(base, prefix));
}

/** The part of a better-sqlite3 connection the check reads. */
interface Connection {
  readonly name: string;
  readonly open: boolean;
  readonly inTransaction: boolean;
  pragma(source: string, options?: { simple: boolean }): unknown;
}
type Method = (this: unknown, ...args: unknown[]) => unknown;
type Prototype = Record<string, Method>;

/** The `synchronous` level of a connection at one COMMIT, and the append it belonged to. */
interface CommitRecord {
  label: string;
  synchronous: number;
}

/**
 * Watches every better-sqlite3 connection of the store's module: the ones a call touches are
 * collected, and each COMMIT (prepared or executed) records the connection's `synchronous` level
 * just before it runs. better-sqlite3 is this package's own, so this is the very class the store
 * uses. `restore()` puts the methods back.
 */
function watchConnections(): {
  connections: Set<Connection>;
  commits: CommitRecord[];
  label: { current: string };
  restore(): void;
} {
  // This package's own better-sqlite3: the very class its stores use.
  const Database = createRequire(import.meta.url)('better-sqlite3') as {
    new (path: string): unknown;
    prototype: Prototype;
  };
  const probe = new Database(':memory:') as { prepare(sql: string): object; close(): void };
  const statementProto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Prototype;
  probe.close();
  const connections = new Set<Connection>();
  const commits: CommitRecord[] = [];
  const label = { current: 'open' };
  const isCommit = (sql: unknown) => typeof sql === 'string' && /^\s*(COMMIT|END)\b/i.test(sql);
  const record = (db: Connection) => {
    if (db.inTransaction)
      commits.push({ label: label.current, synchronous: Number(db.pragma('synchronous', { simple: true })) });
  };
  const saved: [Prototype, string, Method][] = [];
  const wrap = (proto: Prototype, name: string, before: (self: unknown, args: unknown[]) => void) => {
    const original = proto[name]!;
    saved.push([proto, name, original]);
    proto[name] = function (this: unknown, ...args: unknown[]) {
      before(this, args);
      return original.apply(this, args);
    };
  };
  for (const name of ['prepare', 'pragma', 'transaction'])
    wrap(Database.prototype, name, (self) => connections.add(self as Connection));
  wrap(Database.prototype, 'exec', (self, args) => {
    connections.add(self as Connection);
    if (isCommit(args[0])) record(self as Connection);
  });
  wrap(statementProto, 'run', (self) => {
    const statement = self as { source: string; database: Connection };
    if (isCommit(statement.source)) record(statement.database);
  });
  const restore = () => {
    for (const [proto, name, original] of saved.reverse()) proto[name] = original;
  };
  return { connections, commits, label, restore };
}

const LEVELS = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
const levelName = (level: number) => `${LEVELS[level] ?? 'unknown'} (${level})`;

/** What a durability mode promises of the connection (open.ts and the package README). */
interface Promised {
  /** Least `synchronous` between operations. */
  synchronous: number;
  /** Least `synchronous` at the COMMIT of an append holding a boundary event. */
  boundaryCommit: number;
  /** Least `synchronous` at the COMMIT of any other append. */
  otherCommit: number;
  busyTimeoutMs: number;
  maxPageCount?: number;
}

function promised(mode: DurabilityMode, extra: { busyTimeoutMs?: number; maxPageCount?: number }): Promised {
  // strict: FULL everywhere, every commit's WAL fsynced. relaxed: NORMAL between boundaries, but the
  // commit of a batch that closes a unit of work runs at FULL (its fsync makes all before it durable).
  const strict = mode === 'strict';
  return {
    synchronous: strict ? 2 : 1,
    boundaryCommit: 2,
    otherCommit: strict ? 2 : 1,
    busyTimeoutMs: extra.busyTimeoutMs ?? 5000,
    ...(extra.maxPageCount !== undefined && { maxPageCount: extra.maxPageCount }),
  };
}

/** Compares the pragmas of every connection of `path` with what the mode promises. */
function checkPragmas(
  connections: Iterable<Connection>,
  path: string,
  want: Promised,
  when: string,
  check: Checker,
): void {
  const mine = [...connections].filter((db) => db.open && db.name === path);
  if (mine.length === 0) {
    check.violation('not-run', `${when}: no open SQLite connection to ${path} was seen; nothing to check`);
    return;
  }
  for (const db of mine) {
    const read = (pragma: string) => db.pragma(pragma, { simple: true });
    const journal = String(read('journal_mode')).toLowerCase();
    if (journal !== 'wal') check.violation('weak-setting', `${when}: journal_mode is ${journal}, not wal`);
    const sync = Number(read('synchronous'));
    if (sync < want.synchronous)
      check.violation(
        'weak-setting',
        `${when}: synchronous is ${levelName(sync)}; the mode promises ${levelName(want.synchronous)} or more`,
      );
    if (Number(read('foreign_keys')) !== 1) check.violation('weak-setting', `${when}: foreign_keys is off`);
    const busy = Number(read('busy_timeout'));
    if (busy !== want.busyTimeoutMs)
      check.violation('weak-setting', `${when}: busy_timeout is ${busy} ms, not ${want.busyTimeoutMs}`);
    const pages = Number(read('max_page_count'));
    if (want.maxPageCount !== undefined && pages !== want.maxPageCount)
      check.violation('weak-setting', `${when}: max_page_count is ${pages}, not ${want.maxPageCount}`);
  }
}

/** One case of the check: a mode and the options beyond it. */
interface SettingsCase {
  name: string;
  /** The mode whose promise is checked. */
  mode: DurabilityMode;
  /** Opened with no durability option, as a user opens a store, and held to `mode`. */
  opensDefault?: boolean;
  extra: { busyTimeoutMs?: number; maxPageCount?: number };
}

const CASES: readonly SettingsCase[] = [
  { name: 'strict', mode: 'strict', extra: {} },
  { name: 'relaxed', mode: 'relaxed', extra: {} },
  // Contract §4: a store opened with no options is strict, and must run as strict does.
  { name: 'default (no options)', mode: 'strict', opensDefault: true, extra: {} },
  {
    name: 'strict, busyTimeoutMs 1234, maxPageCount 100000',
    mode: 'strict',
    extra: { busyTimeoutMs: 1234, maxPageCount: 100000 },
  },
];

/** Appends a batch without a boundary and one closing the turn; every COMMIT is recorded with its label. */
async function appendLabelled(
  store: SessionStore,
  label: { current: string },
  check: Checker,
): Promise<void> {
  const id = sessionId('settings');
  await check.attempt('create', () => store.create({ id }));
  const batches: [string, string[]][] = [
    ['append without a boundary', ['user/message', 'tool/call']],
    ['append closing a turn', ['tool/result', 'turn/end']],
  ];
  let seq = 0;
  for (const [name, types] of batches) {
    label.current = name;
    const events = types.map((type, i) => workloadEvent('settings', seq + i, type));
    const done = await check.attempt(name, () => store.append(id, events));
    if (done.ok) seq += types.length;
    else check.violation('not-writable', `${name} failed on a fresh database`);
  }
  label.current = 'after the appends';
}

function checkCommits(commits: readonly CommitRecord[], want: Promised, mode: string, check: Checker): void {
  for (const [label, least] of [
    ['append without a boundary', want.otherCommit],
    ['append closing a turn', want.boundaryCommit],
  ] as const) {
    const seen = commits.filter((c) => c.label === label);
    if (seen.length === 0) check.violation('not-run', `${mode}: no COMMIT was seen during the ${label}`);
    for (const commit of seen)
      if (commit.synchronous < least)
        check.violation(
          'weak-setting',
          `${mode}: the COMMIT of the ${label} ran at synchronous=${levelName(commit.synchronous)}; the mode promises ${levelName(least)} or more`,
        );
  }
}

async function runCase(spec: SqliteOpenSpec, testCase: SettingsCase, dir: string): Promise<Checker> {
  const check = new Checker();
  const path = join(dir, `${testCase.name.replace(/\W+/g, '-')}.db`);
  const watch = watchConnections();
  try {
    const want = promised(testCase.mode, testCase.extra);
    const durability = testCase.opensDefault ? undefined : testCase.mode;
    const opened = await check.attempt('open', () => openFromSpec(spec, path, durability, testCase.extra));
    if (!opened.ok) {
      check.violation('not-writable', `${testCase.name}: a fresh database did not open`);
      return check;
    }
    checkPragmas(watch.connections, path, want, `${testCase.name}, after open`, check);
    await appendLabelled(opened.value, watch.label, check);
    checkCommits(watch.commits, want, testCase.name, check);
    checkPragmas(watch.connections, path, want, `${testCase.name}, after the appends`, check);
    await check.attempt('close', () => opened.value.close());
  } finally {
    watch.restore();
  }
  return check;
}

/**
 * The engine-settings cell of a SQLite driver (`engine settings (pragmas)`): for each durability
 * mode, and with no options at all (held to strict, the default), a store is opened on a fresh file and its own connection is read back: `journal_mode=wal`,
 * `synchronous` at least FULL (strict) or NORMAL (relaxed) after open and after appends, FULL at the
 * COMMIT of every strict append and of every relaxed append closing a turn, `foreign_keys=ON`,
 * `busy_timeout` and `max_page_count` as asked. A weaker value is a `weak-setting` violation.
 */
export function sqliteSettingsCheck(name: string, spec: SqliteOpenSpec = SQLITE_OPEN_SPEC): EngineCheckSuite {
  return {
    async run({ report, progress }: ServerFaultContext) {
      const dir = await scratchDir('tidemark-settings-');
      try {
        let n = 0;
        for (const testCase of CASES) {
          const check = await runCase(spec, testCase, dir);
          report.add(name, 'engine settings (pragmas)', testCase.name, check.outcome, true);
          progress?.(`${name} engine settings`, ++n, CASES.length);
        }
        return { runs: CASES.length };
      } finally {
        await fsp.rm(dir, { recursive: true, force: true });
      }
    },
  };
}
