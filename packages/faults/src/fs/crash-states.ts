import { posix } from 'node:path';
import type { FileSystem } from '@tidemark/core';
import type { Volume } from 'memfs';
import { memfsFileSystem, newVolume } from './memfs-fs.js';

// The pure half of the power-loss model: what a disk may hold after a crash at a frozen point.
// CrashFs (crash-fs.ts) records the points; these functions enumerate and build the states.

/** A namespace: which names exist, and which inode each file name points to. */
export interface Namespace {
  files: Map<string, number>;
  dirs: Set<string>;
}

/** A directory operation that a crash may lose until its directory is synced. */
export type DirOp =
  | { kind: 'create' | 'link'; path: string; ino: number }
  | { kind: 'unlink'; path: string }
  | { kind: 'rename'; from: string; to: string }
  | { kind: 'mkdir' | 'rmdir'; path: string };

/** A data operation on a file that a crash may lose (or tear) until the file is synced. */
export type DataOp =
  | { kind: 'write'; position: number; data: Uint8Array }
  | { kind: 'truncate'; length: number };

export interface Inode {
  durable: Uint8Array;
  pending: DataOp[];
}

/** A frozen view of the disk at a crash point: enough to enumerate every crash state lazily. */
export interface CrashPoint {
  /** Index of the traced operation after which the crash happens. */
  afterOp: number;
  /** The operation name (`datasync`, `rename`, …). */
  op: string;
  readonly durable: Namespace;
  readonly pendingDirOps: readonly { op: DirOp; dirs: readonly string[] }[];
  readonly inodes: ReadonlyMap<number, Inode>;
}

/** One state a disk may hold after a crash, described for reports. */
export interface CrashState {
  /** Human-readable description, e.g. `dir ops kept 1,3; ino 4 torn at 17/120`. */
  label: string;
  /** Files (path → bytes) and directories of the state. */
  files: Map<string, Uint8Array>;
  dirs: Set<string>;
}

/** Bounds of crash-state enumeration. */
export interface CrashStateLimits {
  /** Writes longer than this are cut at a sample of offsets rather than at every byte (default 64). */
  exhaustiveWriteBytes?: number;
  /** Number of evenly spaced cut offsets added for a long write (default 8). */
  sampleCuts?: number;
  /** Up to this many volatile directory operations, every keep/lose subset is tried (default 4). */
  exhaustiveDirOps?: number;
  /** Writes cut at every byte offset whatever their length (a caller that names them itself). */
  cutEveryByteOf?: ReadonlySet<DataOp>;
  /**
   * Writes cut at the {@link denseOffsets} as well as the sampled ones: {@link crashStatesAt}
   * passes the writes that are new at a crash point ({@link freshWrites}), so that every write is
   * cut densely once, at the first point where it is pending, and at the sampled offsets after.
   */
  denseCutsOf?: ReadonlySet<DataOp>;
}

/** The last bytes of a write that {@link denseOffsets} cuts at every offset: where a record's terminator and checksum sit. */
export const DENSE_TAIL_BYTES = 32;

/**
 * The writes pending at `point` that were pending at none of the `earlier` points (the recorded
 * points before it, whether swept or not): pure, so that a replay finds the same set.
 */
export function freshWrites(point: CrashPoint, earlier: Iterable<CrashPoint>): Set<DataOp> {
  const seen = new Set<DataOp>();
  for (const before of earlier)
    for (const inode of before.inodes.values()) for (const op of inode.pending) seen.add(op);
  const fresh = new Set<DataOp>();
  for (const inode of point.inodes.values())
    for (const op of inode.pending) if (op.kind === 'write' && !seen.has(op)) fresh.add(op);
  return fresh;
}

export function parentOf(path: string): string {
  return posix.dirname(path);
}

export function cloneNs(ns: Namespace): Namespace {
  return { files: new Map(ns.files), dirs: new Set(ns.dirs) };
}

function underDir(path: string, dir: string): boolean {
  return path.startsWith(dir === '/' ? '/' : `${dir}/`);
}

/** Applies one directory operation to a namespace; pure apart from mutating `ns`. */
export function applyDirOp(ns: Namespace, op: DirOp): void {
  switch (op.kind) {
    case 'create':
    case 'link':
      ns.files.set(op.path, op.ino);
      return;
    case 'unlink':
      ns.files.delete(op.path);
      return;
    case 'mkdir':
      ns.dirs.add(op.path);
      return;
    case 'rmdir':
      ns.dirs.delete(op.path);
      return;
    case 'rename': {
      const ino = ns.files.get(op.from);
      if (ino !== undefined) {
        ns.files.delete(op.from);
        ns.files.set(op.to, ino);
        return;
      }
      if (!ns.dirs.has(op.from)) return;
      for (const dir of [...ns.dirs]) {
        if (dir === op.from || underDir(dir, op.from)) {
          ns.dirs.delete(dir);
          ns.dirs.add(op.to + dir.slice(op.from.length));
        }
      }
      for (const [path, fileIno] of [...ns.files]) {
        if (underDir(path, op.from)) {
          ns.files.delete(path);
          ns.files.set(op.to + path.slice(op.from.length), fileIno);
        }
      }
      return;
    }
  }
}

/** Applies data operations to a file image; pure. */
export function applyDataOps(base: Uint8Array, ops: readonly DataOp[]): Uint8Array {
  let content = base;
  for (const op of ops) {
    if (op.kind === 'truncate') {
      const next = new Uint8Array(op.length);
      next.set(content.subarray(0, Math.min(op.length, content.length)));
      content = next;
    } else {
      const end = op.position + op.data.length;
      const next = new Uint8Array(Math.max(content.length, end));
      next.set(content);
      next.set(op.data, op.position);
      content = next;
    }
  }
  return content;
}

/**
 * Byte offsets at which a pending write of `data` is cut: every offset for short writes, otherwise
 * 0, 1, len-1, every line boundary and an even sample. Offset `len` (complete) is not a cut.
 */
export function cutOffsets(data: Uint8Array, limits: CrashStateLimits = {}): number[] {
  const len = data.length;
  const exhaustive = limits.exhaustiveWriteBytes ?? 64;
  if (len <= exhaustive) return everyOffset(len);
  const cuts = new Set<number>([0, 1, len - 1]);
  for (let i = 0; i < len; i++) if (data[i] === 0x0a) for (const c of [i, i + 1]) if (c < len) cuts.add(c);
  const samples = limits.sampleCuts ?? 8;
  for (let k = 1; k <= samples; k++) cuts.add(Math.floor((len * k) / (samples + 1)));
  return [...cuts].sort((a, b) => a - b);
}

/**
 * The cuts of a write where it is new: the sampled {@link cutOffsets}, every offset in its first 8
 * and last {@link DENSE_TAIL_BYTES} bytes (a record's start, its terminator and checksum), and
 * every offset at or inside a multi-byte UTF-8 character (a cut there leaves half a character,
 * which a recovery that decodes text before it checks bytes can lose). A cut anywhere else in a
 * run of ASCII leaves a torn record like its neighbours do; the full sweep cuts there too.
 */
export function denseOffsets(data: Uint8Array, limits: CrashStateLimits = {}): number[] {
  return withDenseCuts(data, cutOffsets(data, limits));
}

/** `sampled` (the {@link cutOffsets} of `data`) with the dense cuts of {@link denseOffsets} added. */
function withDenseCuts(data: Uint8Array, sampled: readonly number[]): number[] {
  const len = data.length;
  const cuts = new Set(sampled);
  for (let i = 0; i < Math.min(8, len); i++) cuts.add(i);
  for (let i = Math.max(0, len - DENSE_TAIL_BYTES); i < len; i++) cuts.add(i);
  for (let i = 0; i < len; i++)
    if (data[i]! >= 0x80) {
      cuts.add(i);
      if (i + 1 < len) cuts.add(i + 1);
    }
  return [...cuts].sort((a, b) => a - b);
}

function everyOffset(length: number): number[] {
  return Array.from({ length }, (_, i) => i);
}

/** Deterministic garbage (xorshift), so that a failing crash state can be replayed. */
function garbage(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/** One content a file may hold after a crash. */
export interface ContentVariant {
  label: string;
  bytes: Uint8Array;
  /**
   * A cut beyond the sampled offsets, made because the write is new at this point: it is tried
   * with the directory operations all kept only (the sampled cuts try both), which is where the
   * cut file is visible whatever it is.
   */
  extraCut?: true;
}

/** The contents a file may hold after a crash: durable image, whole prefixes, torn and filled writes. */
export function contentVariants(inode: Inode, limits: CrashStateLimits = {}): ContentVariant[] {
  const variants: ContentVariant[] = [{ label: 'durable', bytes: inode.durable }];
  for (let k = 0; k < inode.pending.length; k++) {
    const before = applyDataOps(inode.durable, inode.pending.slice(0, k));
    const op = inode.pending[k]!;
    variants.push({ label: `ops 0..${k}`, bytes: applyDataOps(before, [op]) });
    if (op.kind !== 'write') continue;
    const sampled = cutOffsets(op.data, limits);
    const cuts = limits.cutEveryByteOf?.has(op)
      ? everyOffset(op.data.length)
      : limits.denseCutsOf?.has(op)
        ? withDenseCuts(op.data, sampled)
        : sampled;
    const inSample = new Set(sampled);
    for (const cut of cuts) {
      if (cut === 0) continue; // identical to the prefix without this write
      variants.push({
        label: `op ${k} torn at ${cut}/${op.data.length}`,
        bytes: applyDataOps(before, [
          { kind: 'write', position: op.position, data: op.data.subarray(0, cut) },
        ]),
        ...(!inSample.has(cut) && { extraCut: true }),
      });
    }
    if (op.position + op.data.length > before.length) {
      // ALICE: an appended region may hold zeros or garbage after a crash, its size already updated.
      const region = op.position + op.data.length - before.length;
      const start = before.length;
      for (const [label, fill] of [
        ['zeros', new Uint8Array(region)],
        ['garbage', garbage(region, k + 1)],
      ] as const) {
        const bytes = new Uint8Array(op.position + op.data.length);
        bytes.set(before);
        bytes.set(fill, start);
        variants.push({ label: `op ${k} appended region ${label}`, bytes });
      }
    }
  }
  return variants;
}

/** Keep/lose choices for volatile directory operations: all subsets when few, else a bounded family. */
export function dirOpSubsets(count: number, limits: CrashStateLimits = {}): boolean[][] {
  const exhaustive = limits.exhaustiveDirOps ?? 4;
  if (count <= exhaustive) {
    return Array.from({ length: 2 ** count }, (_, mask) =>
      Array.from({ length: count }, (_, i) => ((mask >> i) & 1) === 1),
    );
  }
  const out: boolean[][] = [];
  for (let keep = 0; keep <= count; keep++) out.push(Array.from({ length: count }, (_, i) => i < keep)); // ordered prefixes
  for (let lost = 0; lost < count; lost++) out.push(Array.from({ length: count }, (_, i) => i !== lost)); // each single loss
  return out;
}

function buildState(
  point: CrashPoint,
  keep: readonly boolean[],
  contentOf: (ino: number) => Uint8Array,
  label: string,
): CrashState {
  const ns = cloneNs(point.durable);
  point.pendingDirOps.forEach((entry, i) => {
    if (keep[i]) applyDirOp(ns, entry.op);
  });
  // A directory whose own entry is gone takes its subtree with it.
  const reachable = (path: string): boolean => {
    for (let dir = parentOf(path); ; dir = parentOf(dir)) {
      if (!ns.dirs.has(dir)) return false;
      if (dir === '/') return true;
    }
  };
  const dirs = new Set([...ns.dirs].filter((dir) => dir === '/' || reachable(dir)));
  const files = new Map<string, Uint8Array>();
  for (const [path, ino] of ns.files) if (reachable(path)) files.set(path, contentOf(ino));
  return { label, files, dirs };
}

/**
 * Every crash state (bounded) of a crash point: volatile directory operations lost or kept, with
 * file contents durable or fully written; then, with directory operations all kept or all lost,
 * each file's pending writes applied in part, torn at byte offsets, or with an appended region of
 * zeros or garbage while the other files hold everything written.
 */
export function enumerateCrashStates(point: CrashPoint, limits: CrashStateLimits = {}): CrashState[] {
  const states: CrashState[] = [];
  const seen = new Set<string>();
  const push = (state: CrashState) => {
    const key =
      [...state.dirs].sort().join('\0') +
      '\u0001' +
      [...state.files]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([p, b]) => `${p}=${Buffer.from(b).toString('base64')}`)
        .join('\0');
    if (seen.has(key)) return;
    seen.add(key);
    states.push(state);
  };
  const durableOf = (ino: number) => point.inodes.get(ino)?.durable ?? new Uint8Array();
  const writtenOf = (ino: number) => {
    const inode = point.inodes.get(ino);
    return inode === undefined ? new Uint8Array() : applyDataOps(inode.durable, inode.pending);
  };
  const pushDirSubset = (keep: readonly boolean[]) => {
    const kept =
      keep
        .map((k, i) => (k ? i : -1))
        .filter((i) => i >= 0)
        .join(',') || 'none';
    push(buildState(point, keep, durableOf, `dir ops kept [${kept}]; data durable only`));
    push(buildState(point, keep, writtenOf, `dir ops kept [${kept}]; data all written`));
  };
  for (const keep of dirOpSubsets(point.pendingDirOps.length, limits)) pushDirSubset(keep);
  // Each directory is synced on its own, so its pending operations are also enumerated on their
  // own (every subset, within the bound) with every other directory's all kept or all lost: a
  // directory whose entries are never synced (lock files) must not push the others' operations
  // past the exhaustive bound.
  const byDir = new Map<string, number[]>();
  point.pendingDirOps.forEach((entry, i) => {
    const dir = entry.dirs[0] ?? '/';
    byDir.set(dir, [...(byDir.get(dir) ?? []), i]);
  });
  if (byDir.size > 1) {
    for (const indices of byDir.values()) {
      for (const subset of dirOpSubsets(indices.length, limits)) {
        for (const others of [true, false]) {
          const keep = point.pendingDirOps.map(() => others);
          indices.forEach((index, j) => {
            keep[index] = subset[j]!;
          });
          pushDirSubset(keep);
        }
      }
    }
  }
  const allKept = point.pendingDirOps.map(() => true);
  const noneKept = point.pendingDirOps.map(() => false);
  for (const [ino, inode] of point.inodes) {
    if (inode.pending.length === 0) continue;
    for (const variant of contentVariants(inode, limits)) {
      const contentOf = (other: number) => (other === ino ? variant.bytes : writtenOf(other));
      push(buildState(point, allKept, contentOf, `dir ops all kept; ino ${ino} ${variant.label}`));
      if (noneKept.length > 0 && variant.extraCut !== true)
        push(buildState(point, noneKept, contentOf, `dir ops all lost; ino ${ino} ${variant.label}`));
    }
  }
  return states;
}

/** How long before the reopen a crash is taken to have happened: a reboot is not instantaneous. */
export const CRASH_AGE_MS = 60 * 60 * 1000;

/**
 * Writes a crash state into a fresh memfs volume and returns a FileSystem over it. Files get an
 * mtime {@link CRASH_AGE_MS} in the past: the store reopens after a reboot, so a file half-written
 * at the crash (a lock, a temp file) is old, not one being written right now by a live process.
 */
export function materialize(state: CrashState): FileSystem & { volume: Volume } {
  const volume = newVolume();
  for (const dir of [...state.dirs].sort((a, b) => a.length - b.length))
    volume.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const then = (Date.now() - CRASH_AGE_MS) / 1000;
  for (const [path, bytes] of state.files) {
    volume.writeFileSync(path, Buffer.from(bytes), { mode: 0o600 });
    volume.utimesSync(path, then, then);
  }
  return memfsFileSystem(volume);
}

/**
 * The crash states of recorded point `index`: every write new at that point is cut at the
 * {@link denseOffsets} whatever the limits, so that even a sampled sweep cuts each write densely
 * once (unless `limits.cutEveryByteOf` names the writes itself).
 */
export function crashStatesAt(
  recorded: readonly { point: CrashPoint }[],
  index: number,
  limits: CrashStateLimits = {},
): CrashState[] {
  const { point } = recorded[index]!;
  if (limits.cutEveryByteOf !== undefined) return enumerateCrashStates(point, limits);
  const earlier = recorded.slice(0, index).map((r) => r.point);
  return enumerateCrashStates(point, { ...limits, denseCutsOf: freshWrites(point, earlier) });
}
