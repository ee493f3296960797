// Where a read() stream stands in a log that another store instance or process may rewrite under
// it (a torn tail repaired, an interrupted tail cut, the session deleted). Pure: the store reads
// the bytes and decides what to do; this keeps, for the stream, the end of the last committed
// batch it took in and the bytes just before that end, so that the store can tell whether the log
// it reads now still holds that batch where the stream found it.
import type { ScanBatch } from './scan.js';

/**
 * Bytes of a batch's end kept as its fingerprint: the end of its closing line, i.e. the append
 * time `at`, the line's CRC-32 over everything on it, and the newline. A rewrite that put other
 * bytes there (another batch, another session, another append time) changes them.
 */
export const MARK_BYTES = 64;

/** The end of the last committed batch a stream took in. */
export interface StreamMark {
  /** Offset just past the batch: where a re-read resumes. */
  offset: number;
  /** The seq after the batch's last event. */
  nextSeq: number;
  /** The batch's last bytes (at most {@link MARK_BYTES}), ending at `offset`. */
  tail: Uint8Array;
}

/** Follows a stream's chunks and keeps its {@link StreamMark}. Memory: two small copies. */
export class MarkKeeper {
  /** The last bytes read before the next chunk (at most MARK_BYTES), for a batch end near a chunk start. */
  private recent: Uint8Array = new Uint8Array(0);
  private last: StreamMark | undefined;

  /** The mark; undefined until a committed batch was read. */
  get mark(): StreamMark | undefined {
    return this.last;
  }

  /** Takes in `chunk`, read at `position`, and the batches the scanner completed in it. */
  advance(chunk: Uint8Array, position: number, batches: readonly ScanBatch[]): void {
    const batch = batches[batches.length - 1];
    if (batch !== undefined) {
      // The batch ends in this chunk; its last bytes may begin in the one before (in `recent`).
      const from = Math.max(batch.offset, batch.endOffset - MARK_BYTES);
      const tail = new Uint8Array(batch.endOffset - from);
      const before = Math.max(0, position - from);
      tail.set(this.recent.subarray(this.recent.length - before));
      tail.set(chunk.subarray(from + before - position, batch.endOffset - position), before);
      this.last = { offset: batch.endOffset, nextSeq: batch.events[batch.events.length - 1]!.seq + 1, tail };
    }
    this.recent = lastBytes(this.recent, chunk);
  }

  /** A re-read resumes at the mark (or at 0 without one): the offset to read from. */
  rewind(): number {
    this.recent = this.last?.tail ?? new Uint8Array(0);
    return this.last?.offset ?? 0;
  }
}

/** True when `bytes`, read at `mark.offset - mark.tail.length`, are the mark's tail. */
export function markMatches(mark: StreamMark, bytes: Uint8Array): boolean {
  return Buffer.compare(bytes, mark.tail) === 0;
}

/** The last MARK_BYTES bytes of `before` followed by `chunk`, copied (the chunk buffer is reused). */
function lastBytes(before: Uint8Array, chunk: Uint8Array): Uint8Array {
  if (chunk.length >= MARK_BYTES) return Uint8Array.from(chunk.subarray(chunk.length - MARK_BYTES));
  const keep = Math.min(before.length, MARK_BYTES - chunk.length);
  const out = new Uint8Array(keep + chunk.length);
  out.set(before.subarray(before.length - keep));
  out.set(chunk, keep);
  return out;
}
