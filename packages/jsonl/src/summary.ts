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
  type FileSystem,
  nextUpdatedAt,
  type SessionSummary,
  summaryAfterAppend,
  toIoError,
} from '@tidemark/core';
import { io, quietly } from './errors.js';
import { type LogHeader, parseInit } from './format.js';
import { tempPath } from './layout.js';
import type { ScanBatch } from './scan.js';

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
