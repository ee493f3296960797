// Summary sidecars: `<id>.summary.json` beside each log, so that `list` reads no logs.
//
// A sidecar is a cache of what the log says plus the fields only `update` sets (title, tags,
// attrs, a chosen firstPrompt). It records `logSize`, the log length it describes: a sidecar whose
// `logSize` differs from the log's size is stale and is brought up to date by folding only the
// batches after `logSize` (or, when that offset is not a batch boundary of this log, the whole
// log). Appends do not rewrite it, so an append costs one write and one fdatasync; the writer
// refreshes it at close, after `update`, after a repair, and when it lags by more than
// {@link SIDECAR_REFRESH_BYTES}.
import {
  applyPatch,
  type BoundaryPredicate,
  emptySummary,
  errnoOf,
  errors,
  type FileHandlePort,
  type FileSystem,
  nextUpdatedAt,
  type SessionSummary,
  summaryAfterAppend,
  toIoError,
} from '@tidemark/core';
import type { StoreContext } from './context.js';
import { io, ioOrAbsent, problemError, quietly } from './errors.js';
import { scanHandle } from './files.js';
import { decodeHeaderLine, type LogHeader, parseInit } from './format.js';
import { type SessionPaths, tempPath } from './layout.js';
import { type ScanBatch, type ScanEnd, settleTear } from './scan.js';

/** The `format` of a sidecar file. */
export const SIDECAR_FORMAT = 'tidemark-summary';
/** A writer refreshes its sidecar once the log grew this much past it. */
export const SIDECAR_REFRESH_BYTES = 1024 * 1024;

/** A decoded sidecar. */
export interface Sidecar {
  /** Length of the log the summary describes (always a batch boundary). */
  logSize: number;
  summary: SessionSummary;
}

/** The sidecar file content. */
export function encodeSidecar(sidecar: Sidecar): string {
  return `${JSON.stringify({ format: SIDECAR_FORMAT, version: 1, logSize: sidecar.logSize, summary: sidecar.summary })}\n`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A timestamp the store can compute with (`Date.parse` finite): anything else would make appends throw. */
function isTime(value: unknown): value is string {
  return typeof value === 'string' && Number.isFinite(Date.parse(value));
}

function isInt(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}

/**
 * Decodes sidecar bytes; `undefined` for anything that is not a well-formed sidecar (the caller
 * then rebuilds from the log). Only known, well-typed fields are kept. Never throws.
 */
export function decodeSidecar(bytes: Uint8Array): Sidecar | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch {
    return undefined;
  }
  return sidecarOf(value);
}

/** A parsed sidecar object checked field by field (the catalog stores the same shape); never throws. */
export function sidecarOf(value: unknown): Sidecar | undefined {
  if (
    !isObject(value) ||
    value.format !== SIDECAR_FORMAT ||
    value.version !== 1 ||
    !isInt(value.logSize, 0)
  ) {
    return undefined;
  }
  const s = value.summary;
  if (!isObject(s)) return undefined;
  const { id, createdAt, updatedAt, cwd, parent, eventCount, committedSeq, interrupted } = s;
  if (typeof id !== 'string' || !isTime(createdAt) || !isTime(updatedAt)) return undefined;
  if (!isInt(eventCount, 0) || !isInt(committedSeq, -1) || typeof interrupted !== 'boolean') return undefined;
  const summary: SessionSummary = { id, createdAt, updatedAt, eventCount, committedSeq, interrupted };
  if (cwd !== undefined) {
    if (typeof cwd !== 'string') return undefined;
    summary.cwd = cwd;
  }
  if (parent !== undefined) {
    if (!isObject(parent) || typeof parent.id !== 'string' || !isInt(parent.seq, -1)) return undefined;
    summary.parent = { id: parent.id, seq: parent.seq };
  }
  Object.assign(summary, parseInit(s));
  return { logSize: value.logSize, summary };
}

/** The summary of a log with no events: the meta plus the fields given before the first batch. */
export function baseSummary(header: LogHeader): SessionSummary {
  const { formatVersion: _version, ...meta } = header.meta;
  return applyPatch(emptySummary(meta), header.init, meta.createdAt);
}

/** The summary after one more committed batch. */
export function foldBatch(
  summary: SessionSummary,
  batch: ScanBatch,
  isBoundary: BoundaryPredicate,
): SessionSummary {
  return summaryAfterAppend(summary, batch.events, isBoundary, nextUpdatedAt(summary.updatedAt, batch.at));
}

/**
 * Computes a session's summary while its log is scanned, starting from the sidecar where the
 * sidecar matches the log (same session, `logSize` on a batch boundary with the same event count),
 * else from the header, keeping the sidecar's `update` fields.
 */
export class SummaryFolder {
  private rebuilt: SessionSummary | undefined;
  private anchored: SessionSummary | undefined;
  private offset = 0;
  /** True until a batch follows the header: the rebuilt `updatedAt` is then `createdAt`, no change. */
  private atHeader = false;

  constructor(
    private readonly sidecar: Sidecar | undefined,
    private readonly isBoundary: BoundaryPredicate,
  ) {}

  /** Starts from a known-good sidecar (incremental scans that skip the header). */
  static fromSidecar(sidecar: Sidecar, isBoundary: BoundaryPredicate): SummaryFolder {
    const folder = new SummaryFolder(sidecar, isBoundary);
    folder.anchored = sidecar.summary;
    folder.offset = sidecar.logSize;
    return folder;
  }

  /** Feeds the header and the offset just past it. */
  header(header: LogHeader, endOffset: number): void {
    this.rebuilt = baseSummary(header);
    this.offset = endOffset;
    this.atHeader = true;
    this.tryAnchor(0);
  }

  /** Feeds a committed batch. */
  batch(batch: ScanBatch): void {
    if (this.anchored !== undefined) {
      this.anchored = foldBatch(this.anchored, batch, this.isBoundary);
      this.offset = batch.endOffset;
      this.atHeader = false;
      return;
    }
    if (this.rebuilt === undefined) return;
    // The first batch's time is the session's first change, as in the reference model, even when
    // it is earlier than a given createdAt (an import from a machine whose clock ran ahead).
    this.rebuilt = this.atHeader
      ? summaryAfterAppend(this.rebuilt, batch.events, this.isBoundary, batch.at)
      : foldBatch(this.rebuilt, batch, this.isBoundary);
    this.atHeader = false;
    this.offset = batch.endOffset;
    this.tryAnchor(this.rebuilt.eventCount);
  }

  private tryAnchor(eventCount: number): void {
    const sidecar = this.sidecar;
    if (sidecar === undefined || this.rebuilt === undefined) return;
    if (!this.sameSession(sidecar.summary)) return;
    if (sidecar.logSize === this.offset && sidecar.summary.eventCount === eventCount)
      this.anchored = sidecar.summary;
  }

  private sameSession(summary: SessionSummary): boolean {
    return (
      this.rebuilt !== undefined &&
      summary.id === this.rebuilt.id &&
      summary.createdAt === this.rebuilt.createdAt
    );
  }

  /** True when the result continues the sidecar (the sidecar matches this log). */
  get isAnchored(): boolean {
    return this.anchored !== undefined;
  }

  /** The summary of everything fed so far; undefined when no header or anchor was fed. */
  result(): SessionSummary | undefined {
    if (this.anchored !== undefined) return this.anchored;
    const rebuilt = this.rebuilt;
    if (rebuilt === undefined) return undefined;
    const sidecar = this.sidecar;
    if (sidecar === undefined || !this.sameSession(sidecar.summary)) return rebuilt;
    // The sidecar no longer matches the log (a repair shortened it): keep what only update sets.
    const kept = sidecar.summary;
    const merged: SessionSummary = { ...rebuilt };
    if (kept.title !== undefined) merged.title = kept.title;
    if (kept.tags !== undefined) merged.tags = kept.tags;
    if (kept.attrs !== undefined) merged.attrs = kept.attrs;
    if (kept.firstPrompt !== undefined) merged.firstPrompt = kept.firstPrompt;
    if (kept.updatedAt > merged.updatedAt) merged.updatedAt = kept.updatedAt;
    return merged;
  }
}

/**
 * Replaces the sidecar atomically: exclusive temp file (0600), write, fdatasync, rename. With
 * `syncDir` the directory is fsynced too, so the new sidecar survives power loss (needed after
 * `update`, whose fields live only here); without it a crash may bring back the previous sidecar,
 * which is merely stale and is recomputed from the log.
 */
export async function writeSidecar(
  fs: FileSystem,
  dir: string,
  path: string,
  sidecar: Sidecar,
  options: { syncDir: boolean; sessionId: string },
): Promise<void> {
  const temp = tempPath(dir);
  const bytes = Buffer.from(encodeSidecar(sidecar), 'utf8');
  const id = options.sessionId;
  const handle = await io(`creating ${temp}`, id, () => fs.open(temp, 'wx', 0o600));
  try {
    let done = 0;
    while (done < bytes.length) {
      const n = await io(`writing ${temp}`, id, () => handle.write(bytes, done, bytes.length - done, done));
      if (n <= 0) throw new Error('write made no progress');
      done += n;
    }
    await io(`syncing ${temp}`, id, () => handle.datasync());
    await io(`closing ${temp}`, id, () => handle.close());
    await io(`replacing ${path}`, id, () => fs.rename(temp, path));
  } catch (error) {
    await quietly(() => handle.close());
    await quietly(() => fs.unlink(temp));
    throw toIoError(error, `writing ${path}`, id);
  }
  if (options.syncDir) await io(`syncing ${dir}`, id, () => fs.syncDir(dir));
}

/**
 * Replaces the sidecar durably for `update`, whose fields live only there: written, then the
 * directory synced. If that sync fails the new sidecar is visible but not durable: `previous` is put
 * back (or the sidecar removed), so that a failed update changes nothing a reader can see.
 */
export async function replaceSidecarDurably(
  fs: FileSystem,
  paths: SessionPaths,
  id: string,
  next: Sidecar,
  previous: Sidecar | undefined,
): Promise<void> {
  await writeSidecar(fs, paths.dir, paths.summary, next, { syncDir: false, sessionId: id });
  try {
    await io(`syncing ${paths.dir}`, id, () => fs.syncDir(paths.dir));
  } catch (error) {
    await quietly(() =>
      previous === undefined
        ? fs.unlink(paths.summary)
        : writeSidecar(fs, paths.dir, paths.summary, previous, { syncDir: false, sessionId: id }),
    );
    throw error;
  }
}

/** Bytes read to find a log's header line without scanning the log (headers are small). */
const HEADER_PROBE_BYTES = 64 * 1024;

/** The sidecar, or undefined when it is missing or malformed. A fault reading it is IO. */
export async function readSidecar(
  ctx: StoreContext,
  paths: SessionPaths,
  id: string,
): Promise<Sidecar | undefined> {
  const bytes = await ioOrAbsent(`reading ${paths.summary}`, id, () =>
    ctx.fs.readFile(paths.summary).catch((error: unknown) => {
      // Too large to be a sidecar (over 2 GiB), or not a file of ours at all (a planted link:
      // ELOOP under O_NOFOLLOW; a FIFO or device: EINVAL): malformed content, not a storage
      // fault. The summary is rebuilt from the log and the next write replaces the entry.
      const code = errnoOf(error);
      if (code === 'ERR_FS_FILE_TOO_LARGE' || code === 'ELOOP' || code === 'EINVAL') return undefined;
      throw error;
    }),
  );
  const sidecar = bytes === undefined ? undefined : decodeSidecar(bytes);
  return sidecar?.summary.id === id ? sidecar : undefined; // another session's (copied) sidecar: ignored
}

/**
 * What a sidecar counted as committed, when it describes this very log: same id (readSidecar) and
 * same createdAt. A sidecar left behind by an earlier session of the same id (a delete whose
 * unlink of it was lost in a crash) says nothing about this log.
 */
export function committedSizeOf(
  sidecar: Sidecar | undefined,
  header: LogHeader | undefined,
): number | undefined {
  if (sidecar === undefined || header === undefined) return undefined;
  return sidecar.summary.createdAt === header.meta.createdAt ? sidecar.logSize : undefined;
}

/**
 * {@link settleTear} for a scan made without the sidecar at hand: reads it only when the scan
 * ended torn (scanFolding, which has it, settles by itself).
 */
export async function settledAgainstSidecar(
  ctx: StoreContext,
  end: ScanEnd,
  paths: SessionPaths,
  id: string,
): Promise<ScanEnd> {
  if (end.torn === undefined) return end;
  return settleTear(end, committedSizeOf(await readSidecar(ctx, paths, id), end.header));
}

/**
 * Scans a whole log once, folding its summary as it goes (anchored on `sidecar` where the sidecar
 * still matches the log), and hands each committed batch to `onBatch` as well.
 */
export async function scanFolding(
  ctx: StoreContext,
  handle: FileHandlePort,
  paths: SessionPaths,
  id: string,
  sidecar: Sidecar | undefined,
  onBatch?: (batch: ScanBatch) => void,
): Promise<{ header: LogHeader | undefined; end: ScanEnd; folder: SummaryFolder }> {
  const folder = new SummaryFolder(sidecar, ctx.isBoundary);
  let header: LogHeader | undefined;
  const scanned = await scanHandle(handle, `reading ${paths.log}`, id, {
    onHeader: (h, endOffset) => {
      header = h;
      folder.header(h, endOffset);
    },
    onBatch: (batch) => {
      folder.batch(batch);
      onBatch?.(batch);
      return true;
    },
  });
  return { header, end: settleTear(scanned, committedSizeOf(sidecar, header)), folder };
}

/**
 * The summary as of `knownSize` bytes of log (default: its current size): the sidecar when
 * current, else the sidecar brought forward over the batches after it, else rebuilt from the log.
 */
export async function currentSummary(
  ctx: StoreContext,
  paths: SessionPaths,
  id: string,
  knownSize?: number,
): Promise<SessionSummary> {
  // A fault reading the sidecar is IO, never "no sidecar": a summary rebuilt from the log alone
  // lacks the fields only update sets, and update or a refresh would then store it without them.
  const sidecar = await readSidecar(ctx, paths, id);
  const size =
    knownSize ??
    (await ioOrAbsent(`inspecting ${paths.log}`, id, () => ctx.fs.lstat(paths.log)))?.size ??
    Number.NaN;
  if (Number.isNaN(size)) throw errors.notFound(id);
  if (sidecar !== undefined && sidecar.logSize === size) return sidecar.summary;
  const handle = await ioOrAbsent(`opening ${paths.log}`, id, () => ctx.fs.open(paths.log, 'r'));
  if (handle === undefined) throw errors.notFound(id);
  try {
    if (sidecar !== undefined && sidecar.logSize > 0 && sidecar.logSize < size) {
      const forward = await bringForward(ctx, handle, paths, id, sidecar);
      if (forward !== undefined) return forward;
    }
    const { end, folder } = await scanFolding(ctx, handle, paths, id, sidecar);
    if (end.problem !== undefined) throw problemError(end.problem, paths.log, id);
    return folder.result()!;
  } finally {
    await quietly(() => handle.close());
  }
}

/**
 * Folds only the batches after the sidecar's `logSize`; undefined when that is not a boundary,
 * or when what follows is damage (the full scan then reports it).
 */
async function bringForward(
  ctx: StoreContext,
  handle: FileHandlePort,
  paths: SessionPaths,
  id: string,
  sidecar: Sidecar,
): Promise<SessionSummary | undefined> {
  const before = new Uint8Array(1);
  const n = await io(`reading ${paths.log}`, id, () => handle.read(before, 0, 1, sidecar.logSize - 1));
  if (n !== 1 || before[0] !== 0x0a) return undefined;
  const fold = async (formatVersion: number) => {
    const folder = SummaryFolder.fromSidecar(sidecar, ctx.isBoundary);
    let first = true;
    let aligned = true;
    const end = await scanHandle(
      handle,
      `reading ${paths.log}`,
      id,
      {
        onBatch: (batch) => {
          if (first && batch.offset !== sidecar.logSize) aligned = false;
          first = false;
          folder.batch(batch);
          return aligned;
        },
      },
      { start: { offset: sidecar.logSize, nextSeq: sidecar.summary.eventCount }, formatVersion },
    );
    return { summary: aligned && end.problem === undefined ? folder.result() : undefined, end };
  };
  const folded = await fold(1);
  if (folded.summary === undefined || folded.end.torn === undefined) return folded.summary;
  // A torn end is a tail or damage depending on the log's format version and on whether the
  // sidecar is this log's (settleTear): both come from the header line, so read just that, not
  // the whole log (list must not cost a crashed session's full length on every call).
  const header = await readHeaderLine(handle, paths, id);
  if (header === undefined) return undefined;
  const again = header.version >= 2 ? await fold(header.version) : folded;
  if (again.summary === undefined) return undefined;
  return settleTear(again.end, committedSizeOf(sidecar, header)).problem === undefined
    ? again.summary
    : undefined;
}

/** The header of a log, from its first line alone; undefined when it cannot be read that way. */
async function readHeaderLine(
  handle: FileHandlePort,
  paths: SessionPaths,
  id: string,
): Promise<LogHeader | undefined> {
  const buffer = Buffer.allocUnsafe(HEADER_PROBE_BYTES);
  const n = await io(`reading ${paths.log}`, id, () => handle.read(buffer, 0, buffer.length, 0));
  const newline = buffer.subarray(0, n).indexOf(0x0a);
  if (newline === -1) return undefined;
  const decoded = decodeHeaderLine(buffer, 0, newline);
  return decoded.ok ? decoded.value : undefined;
}
