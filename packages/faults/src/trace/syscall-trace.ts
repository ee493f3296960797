// Recording a child process's file-system calls with strace, and reading the log back as the
// operations that decide what a disk holds after a power loss (ALICE's method): data writes,
// truncations, syncs and directory operations under one root, plus the child's stdout lines in
// their place among them (its acknowledgements).
import { spawn } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import { isAbsolute, join, normalize } from 'node:path';

/** Where strace is expected; the power-loss cells are `n/a` without it. */
export const STRACE = '/usr/bin/strace';

/** The system calls recorded: everything that changes a file's data, size or name, and every sync. */
export const TRACED_SYSCALLS = [
  'open',
  'openat',
  'creat',
  'write',
  'pwrite64',
  'writev',
  'pwritev',
  'pwritev2',
  'ftruncate',
  'truncate',
  'fallocate',
  'fsync',
  'fdatasync',
  'sync_file_range',
  'sync',
  'syncfs',
  'rename',
  'renameat',
  'renameat2',
  'unlink',
  'unlinkat',
  'mkdir',
  'mkdirat',
  'close',
];

/** One operation of the trace that matters to the disk, in the order the calls returned. */
export type TraceOp =
  /** A file came into being (open with O_CREAT of a path that did not exist). */
  | { kind: 'create'; path: string }
  | { kind: 'write'; path: string; offset: number; data: Buffer }
  | { kind: 'truncate'; path: string; size: number }
  /** fsync/fdatasync of a file or a directory (`sync`/`syncfs`: `path` is the root). */
  | { kind: 'sync'; path: string }
  | { kind: 'unlink'; path: string }
  | { kind: 'rename'; from: string; to: string }
  | { kind: 'mkdir'; path: string }
  /** A line the traced process wrote to its stdout. */
  | { kind: 'say'; line: string };

/** Decodes a C string as strace prints it with `-xx` (every byte as `\xNN`). */
export function decodeStraceString(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && text[i + 1] === 'x') {
      bytes.push(Number.parseInt(text.slice(i + 2, i + 4), 16));
      i += 3;
    } else if (c === '\\') {
      const escaped: Record<string, number> = { n: 10, t: 9, r: 13, '\\': 92, '"': 34, '0': 0 };
      bytes.push(escaped[text[i + 1]!] ?? text.charCodeAt(i + 1));
      i += 1;
    } else bytes.push(c.charCodeAt(0));
  }
  return Buffer.from(bytes);
}

/** Splits the argument list of a call at its top-level commas (strings and `<path>` decorations kept whole). */
function splitArgs(args: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < args.length; i++) {
    const c = args[i]!;
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '<' || c === '[' || c === '{') depth++;
    else if (c === '>' || c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      out.push(args.slice(start, i).trim());
      start = i + 1;
    }
  }
  if (args.trim() !== '') out.push(args.slice(start).trim());
  return out;
}

/** The path of an fd argument decorated by `-y` (`19</tmp/x/store.db-wal>`), or undefined. */
function fdPath(arg: string | undefined): string | undefined {
  const m = /^-?\w+<(.*)>(\(deleted\))?$/.exec(arg ?? '');
  return m === null ? undefined : decodeStraceString(m[1]!).toString('latin1');
}

/** A string argument (`"\x2f..."`); throws when strace cut it (`"..."...`): the data would be wrong. */
function stringArg(arg: string | undefined): Buffer {
  const m = /^"(.*)"(\.\.\.)?$/s.exec(arg ?? '');
  if (m === null) throw new Error(`not a string argument: ${arg?.slice(0, 80)}`);
  if (m[2] !== undefined) throw new Error('strace cut a string argument: raise -s');
  return decodeStraceString(m[1]!);
}

function resolveAt(dirArg: string | undefined, pathArg: string | undefined): string {
  const path = stringArg(pathArg).toString('latin1');
  if (isAbsolute(path)) return normalize(path);
  return normalize(join(fdPath(dirArg) ?? '/', path));
}

/** One completed call: name, arguments, and the return value as strace printed it. */
interface RawCall {
  name: string;
  args: string[];
  result: string;
}

/**
 * Joins `<unfinished ...>` / `<... resumed>` halves (strace -f, several threads) and yields the
 * completed calls in the order they returned.
 */
function* completedCalls(log: string): Generator<RawCall> {
  const unfinished = new Map<string, string>();
  for (const raw of log.split('\n')) {
    const m = /^(\d+) +(.*)$/.exec(raw);
    if (m === null) continue;
    const [, pid, rest] = m as unknown as [string, string, string];
    let line = rest;
    if (line.endsWith('<unfinished ...>')) {
      unfinished.set(pid, line.slice(0, -'<unfinished ...>'.length));
      continue;
    }
    const resumed = /^<\.\.\. \w+ resumed>(.*)$/.exec(line);
    if (resumed !== null) {
      line = (unfinished.get(pid) ?? '') + resumed[1]!;
      unfinished.delete(pid);
    }
    const call = /^(\w+)\((.*)\) += (.*)$/s.exec(line);
    if (call === null) continue;
    yield { name: call[1]!, args: splitArgs(call[2]!), result: call[3]! };
  }
}

/** Reads an strace log (`-f -y -xx`) as the operations under `root`, and the process's stdout lines. */
export function parseStraceLog(log: string, root: string): TraceOp[] {
  const ops: TraceOp[] = [];
  const under = (path: string | undefined): path is string =>
    path !== undefined && (path === root || path.startsWith(`${root}/`));
  const known = new Set<string>();
  /** Position of descriptors opened by `write` users (SQLite writes with pwrite64). */
  const positions = new Map<string, number>();
  for (const call of completedCalls(log)) {
    if (call.result.startsWith('-1')) continue;
    const ret = Number.parseInt(call.result, 10);
    const op = toOp(call, ret, under, known, positions);
    if (op !== undefined) ops.push(...op);
  }
  return ops;
}

function toOp(
  call: RawCall,
  ret: number,
  under: (path: string | undefined) => path is string,
  known: Set<string>,
  positions: Map<string, number>,
): TraceOp[] | undefined {
  const { name, args } = call;
  switch (name) {
    case 'open':
    case 'openat':
    case 'creat': {
      const path = name === 'openat' ? resolveAt(args[0], args[1]) : resolveAt(undefined, args[0]);
      if (!under(path)) return undefined;
      const flags = name === 'creat' ? 'O_CREAT|O_TRUNC' : (args[name === 'openat' ? 2 : 1] ?? '');
      const fd = /^(\d+)/.exec(call.result)?.[1];
      if (fd !== undefined) positions.set(fd, 0);
      const ops: TraceOp[] = [];
      if (flags.includes('O_CREAT') && !known.has(path)) ops.push({ kind: 'create', path });
      known.add(path);
      if (flags.includes('O_TRUNC')) ops.push({ kind: 'truncate', path, size: 0 });
      return ops;
    }
    case 'write':
    case 'pwrite64': {
      const data = stringArg(args[1]).subarray(0, ret);
      if (args[0]?.startsWith('1<')) return [{ kind: 'say', line: data.toString('utf8') }];
      const path = fdPath(args[0]);
      if (!under(path)) return undefined;
      const fd = /^(\d+)/.exec(args[0]!)![1]!;
      const offset = name === 'pwrite64' ? Number(args[3]) : (positions.get(fd) ?? 0);
      if (name === 'write') positions.set(fd, offset + ret);
      return [{ kind: 'write', path, offset, data }];
    }
    case 'writev':
    case 'pwritev':
    case 'pwritev2': {
      const path = fdPath(args[0]);
      if (!under(path)) return undefined;
      const parts = [...(args[1] ?? '').matchAll(/iov_base="((?:[^"\\]|\\.)*)"/g)].map((m) =>
        decodeStraceString(m[1]!),
      );
      const fd = /^(\d+)/.exec(args[0]!)![1]!;
      const offset = name === 'writev' ? (positions.get(fd) ?? 0) : Number(args[3]);
      if (name === 'writev') positions.set(fd, offset + ret);
      return [{ kind: 'write', path, offset, data: Buffer.concat(parts).subarray(0, ret) }];
    }
    default:
      return metadataOp(call, under, known);
  }
}

/** Truncations, syncs and directory operations. */
function metadataOp(
  call: RawCall,
  under: (path: string | undefined) => path is string,
  known: Set<string>,
): TraceOp[] | undefined {
  const { name, args } = call;
  const one = (op: TraceOp, path: string | undefined) => (under(path) ? [op] : undefined);
  switch (name) {
    case 'ftruncate':
    case 'fallocate': {
      const path = fdPath(args[0]);
      // fallocate only reserves blocks; a crash cannot show more than the size it reached.
      if (name === 'fallocate') return undefined;
      return path === undefined ? undefined : one({ kind: 'truncate', path, size: Number(args[1]) }, path);
    }
    case 'truncate': {
      const path = resolveAt(undefined, args[0]);
      return one({ kind: 'truncate', path, size: Number(args[1]) }, path);
    }
    case 'fsync':
    case 'fdatasync':
    case 'sync_file_range': {
      const path = fdPath(args[0]);
      // sync_file_range makes no metadata durable and is no barrier: it is not a sync.
      if (name === 'sync_file_range' || path === undefined) return undefined;
      return one({ kind: 'sync', path }, path);
    }
    case 'sync':
    case 'syncfs':
      return [{ kind: 'sync', path: '*' }];
    case 'unlink':
    case 'unlinkat': {
      const path = name === 'unlink' ? resolveAt(undefined, args[0]) : resolveAt(args[0], args[1]);
      if (name === 'unlinkat' && args[2]?.includes('AT_REMOVEDIR')) return undefined;
      known.delete(path);
      return one({ kind: 'unlink', path }, path);
    }
    case 'rename':
    case 'renameat':
    case 'renameat2': {
      const [from, to] =
        name === 'rename'
          ? [resolveAt(undefined, args[0]), resolveAt(undefined, args[1])]
          : [resolveAt(args[0], args[1]), resolveAt(args[2], args[3])];
      known.delete(from);
      known.add(to);
      return under(from) || under(to) ? [{ kind: 'rename', from, to }] : undefined;
    }
    case 'mkdir':
    case 'mkdirat': {
      const path = name === 'mkdir' ? resolveAt(undefined, args[0]) : resolveAt(args[0], args[1]);
      return one({ kind: 'mkdir', path }, path);
    }
    default:
      return undefined;
  }
}

/** What {@link traceChild} resolves. */
export interface TracedRun {
  ops: TraceOp[];
  /** The child's stdout, as it read it. */
  stdout: string;
  exitCode: number | null;
  stderr: string;
}

/** Whether strace can trace a child here (installed, and ptrace allowed). */
export async function straceWorks(): Promise<boolean> {
  if (!existsSync(STRACE)) return false;
  const run = await spawnCollect(STRACE, ['-qq', '-o', '/dev/null', '-e', 'trace=none', '/bin/true']);
  return run.exitCode === 0;
}

function spawnCollect(
  command: string,
  args: readonly string[],
): Promise<{ stdout: string; stderr: string; exitCode: number | null }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', (error) => resolve({ stdout, stderr: String(error), exitCode: null }));
    child.on('close', (exitCode) => resolve({ stdout, stderr, exitCode }));
  });
}

/**
 * Runs `node script arg` under strace (`-f`: every thread) and returns its operations under `root`.
 * Strings are printed whole (`-s` 1 MiB) and as hex (`-xx`), descriptors with their paths (`-y`).
 */
export async function traceChild(
  script: string,
  arg: string,
  root: string,
  logPath: string,
): Promise<TracedRun> {
  const run = await spawnCollect(STRACE, [
    '-f',
    '-qq',
    '-y',
    '-xx',
    '-s',
    String(1 << 20),
    '-e',
    'signal=none',
    '-e',
    `trace=${TRACED_SYSCALLS.join(',')}`,
    '-o',
    logPath,
    process.execPath,
    script,
    arg,
  ]);
  const log = await fsp.readFile(logPath, 'latin1');
  return { ops: parseStraceLog(log, root), ...run };
}
