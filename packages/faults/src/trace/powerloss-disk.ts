// The disk a traced process leaves behind, and the states a power loss may leave of it (ALICE's
// model, over the operations of syscall-trace.ts): a file's writes since its last fsync/fdatasync
// may be lost, kept in a prefix of their order, or the first lost one kept in part (torn); a
// create, unlink, rename or mkdir is durable only once its directory was fsynced. Files are
// independent of one another: what one kept says nothing about another (no order across files).
import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import type { TraceOp } from './syscall-trace.js';

/** A change to a file's data not yet made durable. */
export type TracedDataOp =
  | { kind: 'write'; offset: number; data: Buffer }
  | { kind: 'truncate'; size: number };

/** A change to a directory not yet made durable; `dir` must be fsynced for it to last. */
export type TracedDirOp =
  | { kind: 'link'; path: string; inode: number; dir: string }
  | { kind: 'unlink'; path: string; dir: string }
  | { kind: 'rename'; from: string; to: string; dir: string }
  | { kind: 'mkdir'; path: string; dir: string };

/** The disk at one instant: durable images, what is pending on them, and the names. */
export interface DiskSnapshot {
  readonly durable: ReadonlyMap<number, Buffer>;
  readonly pending: ReadonlyMap<number, readonly TracedDataOp[]>;
  /** Names (path to inode) that survive any crash; directories map to -1. */
  readonly durableNames: ReadonlyMap<string, number>;
  readonly pendingDir: readonly TracedDirOp[];
  /** The names the process saw (for labels). */
  readonly names: ReadonlyMap<string, number>;
}

/** A file's data with `ops` applied in order; never changes `base`. */
export function applyData(base: Buffer, ops: readonly TracedDataOp[]): Buffer {
  let out = base;
  for (const op of ops) {
    if (op.kind === 'truncate') {
      out =
        op.size <= out.length
          ? out.subarray(0, op.size)
          : Buffer.concat([out, Buffer.alloc(op.size - out.length)]);
      continue;
    }
    const end = op.offset + op.data.length;
    const next = Buffer.alloc(Math.max(out.length, end));
    out.copy(next);
    op.data.copy(next, op.offset);
    out = next;
  }
  return out;
}

/** Replays trace operations and keeps what is durable apart from what is only cached. */
export class TracedDisk {
  private readonly durable = new Map<number, Buffer>();
  private readonly pending = new Map<number, TracedDataOp[]>();
  private readonly durableNames: Map<string, number>;
  private pendingDir: TracedDirOp[] = [];
  private readonly names: Map<string, number>;
  private nextInode = 1;

  /** `root` exists and is durable (the harness made and synced it). */
  constructor(root: string) {
    this.durableNames = new Map([[root, -1]]);
    this.names = new Map([[root, -1]]);
  }

  /** Replays one traced operation (a `say` line changes nothing on disk and is ignored). */
  apply(op: TraceOp): void {
    switch (op.kind) {
      case 'create': {
        const inode = this.nextInode++;
        this.durable.set(inode, Buffer.alloc(0));
        this.pending.set(inode, []);
        this.names.set(op.path, inode);
        this.pendingDir.push({ kind: 'link', path: op.path, inode, dir: dirname(op.path) });
        return;
      }
      case 'write':
      case 'truncate': {
        const inode = this.names.get(op.path);
        if (inode === undefined || inode < 0) return;
        const data: TracedDataOp =
          op.kind === 'write'
            ? { kind: 'write', offset: op.offset, data: op.data }
            : { kind: 'truncate', size: op.size };
        this.pending.get(inode)!.push(data);
        return;
      }
      case 'sync':
        this.sync(op.path);
        return;
      default:
        this.applyName(op);
    }
  }

  private applyName(op: TraceOp): void {
    if (op.kind === 'unlink') {
      this.names.delete(op.path);
      this.pendingDir.push({ kind: 'unlink', path: op.path, dir: dirname(op.path) });
    } else if (op.kind === 'rename') {
      const inode = this.names.get(op.from);
      if (inode === undefined) return;
      this.names.delete(op.from);
      this.names.set(op.to, inode);
      this.pendingDir.push({ kind: 'rename', from: op.from, to: op.to, dir: dirname(op.to) });
    } else if (op.kind === 'mkdir') {
      this.names.set(op.path, -1);
      this.pendingDir.push({ kind: 'mkdir', path: op.path, dir: dirname(op.path) });
    }
  }

  /** fsync of a file makes its data durable; of a directory, its pending entries; `*` everything. */
  private sync(path: string): void {
    const all = path === '*';
    const inode = this.names.get(path);
    for (const [id, ops] of this.pending)
      if (all || id === inode) {
        this.durable.set(id, applyData(this.durable.get(id)!, ops));
        this.pending.set(id, []);
      }
    if (all || inode === -1) {
      const [done, left] = [[], []] as [TracedDirOp[], TracedDirOp[]];
      for (const op of this.pendingDir) (all || op.dir === path ? done : left).push(op);
      for (const op of done) applyDirOp(this.durableNames, op);
      this.pendingDir = left;
    }
  }

  /** The disk now, shared structure and all: later operations do not change it. */
  snapshot(): DiskSnapshot {
    return {
      durable: new Map(this.durable),
      pending: new Map([...this.pending].map(([id, ops]) => [id, [...ops]])),
      durableNames: new Map(this.durableNames),
      pendingDir: [...this.pendingDir],
      names: new Map(this.names),
    };
  }
}

function applyDirOp(names: Map<string, number>, op: TracedDirOp): void {
  if (op.kind === 'link') names.set(op.path, op.inode);
  else if (op.kind === 'mkdir') names.set(op.path, -1);
  else if (op.kind === 'unlink') names.delete(op.path);
  else {
    const inode = names.get(op.from);
    names.delete(op.from);
    if (inode !== undefined) names.set(op.to, inode);
  }
}

/** Which of the pending operations a crash state keeps. */
export interface CrashChoice {
  /** Per inode, how many of its pending data operations survive (a prefix); absent: none. */
  kept: ReadonlyMap<number, number>;
  /** The first lost write of an inode survives in part: its first `bytes` bytes. */
  torn?: { inode: number; bytes: number };
  /** Indexes of the pending directory operations that survive. */
  dirKept: ReadonlySet<number>;
  label: string;
}

/** The files (path to content) of a crash state; a file under a directory that did not survive is gone. */
export function materializeTraced(snapshot: DiskSnapshot, choice: CrashChoice): Map<string, Buffer> {
  const names = new Map(snapshot.durableNames);
  snapshot.pendingDir.forEach((op, i) => {
    if (choice.dirKept.has(i)) applyDirOp(names, op);
  });
  const files = new Map<string, Buffer>();
  for (const [path, inode] of [...names].sort(([a], [b]) => a.localeCompare(b))) {
    if (inode < 0 || names.get(dirname(path)) !== -1) continue;
    const ops = snapshot.pending.get(inode) ?? [];
    const count = choice.kept.get(inode) ?? 0;
    let data = applyData(snapshot.durable.get(inode) ?? Buffer.alloc(0), ops.slice(0, count));
    const cut = ops[count];
    if (choice.torn?.inode === inode && cut?.kind === 'write')
      data = applyData(data, [
        { kind: 'write', offset: cut.offset, data: cut.data.subarray(0, choice.torn.bytes) },
      ]);
    files.set(path, data);
  }
  return files;
}

/** A digest of a crash state's files, to check each distinct state once. */
export function stateSignature(files: ReadonlyMap<string, Buffer>): string {
  const hash = createHash('sha1');
  for (const [path, data] of files) hash.update(`${path}\0${data.length}\0`).update(data);
  return hash.digest('hex');
}

/** How many states to build at one crash point. */
export interface EnumerationLimits {
  /** Every prefix of each file's pending writes, torn writes at several places, each directory op alone. */
  full: boolean;
}

function pathOf(snapshot: DiskSnapshot, inode: number): string {
  for (const [path, id] of snapshot.names) if (id === inode) return path.slice(path.lastIndexOf('/') + 1);
  return `inode ${inode}`;
}

/** Cut points of a torn write of `length` bytes: sector boundaries, and a byte in for short ones. */
function tornCuts(length: number, full: boolean): number[] {
  const cuts =
    length >= 1024
      ? [512, Math.floor(length / 1024) * 512, length - 512]
      : [1, Math.floor(length / 2), length - 1];
  const unique = [...new Set(cuts)].filter((c) => c > 0 && c < length);
  return full ? unique : unique.slice(1, 2);
}

/**
 * The crash states at one instant: everything lost; everything kept; the data kept but the
 * unsynced directory operations lost; for each file, a prefix of its pending writes with the
 * others lost (and with the others kept); a write torn; each pending directory operation lost on
 * its own. `full: false` samples: the middle prefix, one torn write, the last directory op.
 */
export function enumerateCrashChoices(snapshot: DiskSnapshot, limits: EnumerationLimits): CrashChoice[] {
  const { full } = limits;
  const files = [...snapshot.pending].filter(([, ops]) => ops.length > 0);
  const allKept = new Map(files.map(([id, ops]) => [id, ops.length]));
  const allDirs = new Set(snapshot.pendingDir.map((_, i) => i));
  const none = new Set<number>();
  const choices: CrashChoice[] = [
    { kept: new Map(), dirKept: none, label: 'every unsynced write and directory operation lost' },
    { kept: allKept, dirKept: allDirs, label: 'everything written kept' },
  ];
  if (allDirs.size > 0)
    choices.push({ kept: allKept, dirKept: none, label: 'writes kept, unsynced directory operations lost' });
  for (const [inode, ops] of files) {
    const name = pathOf(snapshot, inode);
    const prefixes = full ? ops.map((_, k) => k).slice(1) : [Math.floor(ops.length / 2)].filter((k) => k > 0);
    for (const k of prefixes) {
      choices.push({
        kept: new Map([[inode, k]]),
        dirKept: allDirs,
        label: `${name} keeps ${k} of ${ops.length} unsynced writes, other files lose theirs`,
      });
      if (full || files.length > 1)
        choices.push({
          kept: new Map([...allKept, [inode, k]]),
          dirKept: allDirs,
          label: `${name} keeps ${k} of ${ops.length} unsynced writes, other files keep theirs`,
        });
    }
    const tornAt = full ? [...new Set([0, Math.floor(ops.length / 2), ops.length - 1])] : [ops.length - 1];
    for (const k of tornAt) {
      const op = ops[k];
      if (op?.kind !== 'write') continue;
      for (const bytes of tornCuts(op.data.length, full))
        choices.push({
          kept: new Map([[inode, k]]),
          torn: { inode, bytes },
          dirKept: allDirs,
          label: `${name} keeps ${k} of ${ops.length} unsynced writes and ${bytes} of ${op.data.length} bytes of the next`,
        });
    }
  }
  const lost = full ? [...allDirs] : [...allDirs].slice(-1);
  for (const i of lost) {
    const op = snapshot.pendingDir[i]!;
    const what = op.kind === 'rename' ? `rename ${op.from} → ${op.to}` : `${op.kind} ${op.path}`;
    choices.push({
      kept: allKept,
      dirKept: new Set([...allDirs].filter((j) => j !== i)),
      label: `${what.replace(/\/\S*\//g, '')} lost, all else kept`,
    });
  }
  return choices;
}
