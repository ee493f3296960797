// A writer released while idle, remembered so that taking its session's lock again is cheap. The
// memory is a hint, never the truth: under the lock the log is opened again by path and its
// length and last bytes are compared with what the writer left; anything else (another process
// appended, cut, repaired, deleted or replaced the log meanwhile) makes the caller scan the log as
// for any new writer.
import type { FileHandlePort } from '@tidemark/core';
import type { ParkedWriter, StoreContext, Writer } from './context.js';
import { io } from './errors.js';

/**
 * Bytes of the log's end compared on re-acquire: more than a closing line's `end`, `at` and
 * `crc` (about 70 bytes), whose CRC covers the whole line, so a log cut and written again to the
 * same length differs here unless its last line is the very same.
 */
export const PARKED_TAIL_BYTES = 128;

/** Parked writers kept per store instance (the least recently parked are forgotten beyond it). */
export const PARKED_LIMIT = 1024;

/** Reads up to `PARKED_TAIL_BYTES` bytes ending at `size` from `handle`. */
export async function readTail(
  handle: FileHandlePort,
  size: number,
  what: string,
  id: string,
): Promise<Buffer> {
  const length = Math.min(PARKED_TAIL_BYTES, size);
  const tail = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const n = await io(what, id, () => handle.read(tail, done, length - done, size - length + done));
    if (n === 0) break;
    done += n;
  }
  return tail.subarray(0, done);
}

/** What `writer` knows of its log, with its last bytes `tail`. */
export function parkedOf(writer: Writer, tail: Buffer): ParkedWriter {
  const { paths, size, nextSeq, lastAtMs, sidecarSize, repaired } = writer;
  return { paths, size, nextSeq, lastAtMs, sidecarSize, repaired, tail };
}

/** Remembers a parked writer of `id`, forgetting the oldest beyond {@link PARKED_LIMIT}. */
export function rememberParked(ctx: StoreContext, id: string, parked: ParkedWriter): void {
  ctx.parked.delete(id);
  ctx.parked.set(id, parked);
  if (ctx.parked.size > PARKED_LIMIT) ctx.parked.delete(ctx.parked.keys().next().value!);
}

/** Whether the log open on `handle` (its lock held) is still exactly as `parked` left it. */
export async function isAsParked(handle: FileHandlePort, parked: ParkedWriter, id: string): Promise<boolean> {
  const what = `reading ${parked.paths.log}`;
  const size = await io(what, id, () => handle.size());
  if (size !== parked.size || parked.tail.length !== Math.min(PARKED_TAIL_BYTES, size)) return false;
  return (await readTail(handle, size, what, id)).equals(parked.tail);
}
