// Reading logs: a whole log at once (load, cut) and a stream of events by byte position (read,
// the idempotent-retry comparison of append). As LevelDB's log reader does, a reader trusts only
// what the framing proves; unlike it, a reader here may race a rewrite of the log by another
// instance (torn-tail repair, cut, delete), so an anomaly is confirmed before it is reported.
import { errors, type FileHandlePort, type SessionEvent, type SessionSummary } from '@tidemark/core';
import { locate } from './catalog.js';
import type { StoreContext } from './context.js';
import { foreignLog, io, ioOrAbsent, problemError, quietly } from './errors.js';
import type { LogHeader } from './format.js';
import type { SessionPaths } from './layout.js';
import { MarkKeeper, markMatches, type StreamMark } from './mark.js';
import { LogScanner, type ScanBatch, type ScanEnd, settleTear } from './scan.js';
import { committedSizeOf, readSidecar, type Sidecar, scanFolding } from './summary.js';

/** A full read of a log. */
export interface WholeLog {
  header: LogHeader | undefined;
  batches: ScanBatch[];
  end: ScanEnd;
  summary: SessionSummary | undefined;
}

/** Re-reads of an anomaly at one place in a stream, before it is taken as the log's (see readEvents). */
const MAX_REREADS = 3;

/** Bytes read per call by a stream. */
const STREAM_CHUNK_BYTES = 256 * 1024;

/** Reads a whole log with its summary (anchored on the sidecar where it still matches). */
export async function readWhole(ctx: StoreContext, paths: SessionPaths, id: string): Promise<WholeLog> {
  const handle = await ioOrAbsent(`opening ${paths.log}`, id, () => ctx.fs.open(paths.log, 'r'));
  if (handle === undefined) throw errors.notFound(id);
  try {
    // A fault reading the sidecar is IO: rebuilding from the log would drop what only update set.
    const sidecar = await readSidecar(ctx, paths, id);
    const batches: ScanBatch[] = [];
    const { header, end, folder } = await scanFolding(ctx, handle, paths, id, sidecar, (batch) => {
      batches.push(batch);
    });
    return { header, batches, end, summary: folder.result() };
  } finally {
    await quietly(() => handle.close());
  }
}

/** The events of `batches`, in order. */
export function flatten(batches: readonly ScanBatch[]): SessionEvent[] {
  const events: SessionEvent[] = [];
  for (const batch of batches) for (const event of batch.events) events.push(event);
  return events;
}

/**
 * Streams the events of `fromSeq..toSeq` by byte positions, so another instance or process may
 * rewrite the log under the stream: repair a torn tail (truncate, then append), cut a tail,
 * delete the session. Bytes read at successive positions then need not come from one version of
 * the log, and the sidecar may describe a newer one: a tear or CORRUPT seen so may be an artefact
 * of the rewrite. So an anomaly ends the stream only once the log as it is now confirms it:
 * reopened by path, the log must still hold the last committed batch the stream took in (the
 * {@link StreamMark}), else it was rewritten under the stream, which ends there; if it does, the
 * sidecar is read again, then the bytes after that batch are read and scanned again. Only an
 * anomaly that {@link MAX_REREADS} such re-reads meet at the same place is reported.
 */
export async function* readEvents(
  ctx: StoreContext,
  id: string,
  fromSeq: number,
  toSeq: number,
): AsyncGenerator<SessionEvent> {
  const paths = await locate(ctx, id);
  if (paths === undefined) throw errors.notFound(id);
  const opened = await ioOrAbsent(`opening ${paths.log}`, id, () => ctx.fs.open(paths.log, 'r'));
  if (opened === undefined) throw errors.notFound(id);
  ctx.readers.add(opened);
  const stream = new LogStream(ctx, paths, id, opened);
  try {
    for (;;) {
      if (yield* stream.pass(fromSeq, toSeq)) return;
      if (!(await stream.confirmOrRewind())) return;
    }
  } finally {
    await stream.release();
  }
}

/** The state of one {@link readEvents} stream between its passes over the log. */
class LogStream {
  private readonly buffer = Buffer.allocUnsafe(STREAM_CHUNK_BYTES);
  private readonly keeper = new MarkKeeper();
  private scanner = new LogScanner();
  private position = 0;
  private header: LogHeader | undefined;
  /** The sidecar as read before the current pass (none before the first). */
  private sidecar: Sidecar | undefined;
  private rereads = 0;
  private rereadAt: number | undefined;

  constructor(
    private readonly ctx: StoreContext,
    private readonly paths: SessionPaths,
    private readonly id: string,
    private handle: FileHandlePort,
  ) {}

  /** Yields the events in range from the current position to the end; true once past `toSeq`. */
  async *pass(fromSeq: number, toSeq: number): AsyncGenerator<SessionEvent, boolean> {
    const { ctx, paths, id } = this;
    for (;;) {
      // Resumed after close(): the descriptor is gone, and the answer is CLOSED, not an IO error.
      ctx.assertOpen();
      const from = this.position;
      const handle = this.handle;
      const n = await io(`reading ${paths.log}`, id, () =>
        handle.read(this.buffer, 0, this.buffer.length, from),
      );
      if (n === 0) return false;
      const chunk = this.buffer.subarray(0, n);
      const batches = this.scanner.push(chunk);
      this.keeper.advance(chunk, this.position, batches);
      this.position += n;
      this.header ??= this.scanner.headerLine?.header;
      if (this.header !== undefined && this.header.meta.id !== id) {
        throw foreignLog(paths.log, id, this.header.meta.id);
      }
      for (const batch of batches) {
        for (const event of batch.events) {
          if (event.seq > toSeq) return true;
          if (event.seq >= fromSeq) yield event;
        }
      }
      if (this.scanner.failed) return false;
    }
  }

  /**
   * At the end of a pass: false when the stream ends there (a clean end, the log deleted or
   * rewritten under it, or a torn tail confirmed); throws a confirmed problem; otherwise rewinds
   * to the last mark for another pass and returns true.
   */
  async confirmOrRewind(): Promise<boolean> {
    const { ctx, paths, id } = this;
    const end = this.scanner.finish();
    if (end.problem === undefined && end.torn === undefined) return false;
    // A header newer than this code is no artefact of a rewrite: every writer keeps the header.
    if (end.problem?.kind === 'unsupported-format') throw problemError(end.problem, paths.log, id);
    // The log as it is now, through a new descriptor: the path may name another file by now.
    const current = await ioOrAbsent(`opening ${paths.log}`, id, () => ctx.fs.open(paths.log, 'r'));
    const previous = this.handle;
    if (ctx.readers.delete(previous)) await quietly(() => previous.close());
    if (current === undefined) return false; // deleted under the stream: it ends there
    this.handle = current;
    ctx.readers.add(current);
    ctx.assertOpen();
    const mark = this.keeper.mark;
    if (mark !== undefined && !(await this.markHolds(current, mark))) return false;
    if (mark?.offset !== this.rereadAt) {
      this.rereadAt = mark?.offset;
      this.rereads = 0;
    }
    if (this.rereads === MAX_REREADS) {
      // Met at the same place by every re-read: judged as load judges it, against the sidecar
      // read before this pass (a tear is only a tail past what that sidecar counted).
      const settled = settleTear(end, committedSizeOf(this.sidecar, this.header));
      if (settled.problem !== undefined) throw problemError(settled.problem, paths.log, id);
      return false; // a torn tail: not part of the log
    }
    this.rereads++;
    // Before the pass it judges: a sidecar read after the scan may count bytes written later.
    this.sidecar = await readSidecar(ctx, paths, id);
    this.position = this.keeper.rewind();
    if (mark === undefined) {
      this.header = undefined;
      this.scanner = new LogScanner();
    } else {
      const start = { offset: mark.offset, nextSeq: mark.nextSeq };
      this.scanner = new LogScanner({ start, formatVersion: this.header!.version });
    }
    return true;
  }

  /** Closes the descriptor the stream still holds (unless close() took it already). */
  async release(): Promise<void> {
    const last = this.handle;
    if (this.ctx.readers.delete(last)) await quietly(() => last.close());
  }

  /** True when the log open on `handle` still holds the batch end `mark` where the stream found it. */
  private async markHolds(handle: FileHandlePort, mark: StreamMark): Promise<boolean> {
    const bytes = new Uint8Array(mark.tail.length);
    const at = mark.offset - bytes.length;
    for (let filled = 0; filled < bytes.length; ) {
      const n = await io(`reading ${this.paths.log}`, this.id, () =>
        handle.read(bytes, filled, bytes.length - filled, at + filled),
      );
      if (n === 0) return false; // shorter than the mark: cut or truncated under the stream
      filled += n;
    }
    return markMatches(mark, bytes);
  }
}
