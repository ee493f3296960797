// read({ last }): the newest events of a log without reading it from the start. The log is read
// backwards from its end, line by line, to the first line of a batch far enough back; then the
// scanner runs forward from there, as it runs from a sidecar's boundary in a summary rebuild. This
// path answers only when that forward scan ends clean at the end of the file: anything else (a
// torn or damaged tail, a log of format 1, whose lines do not say where their batch starts, a log
// changing under the read, more bytes than the bound) is left to the full stream (reader.ts), which
// knows how to judge it. So the answer is always the one the full stream gives for a clean log.
import type { FileHandlePort, SessionEvent } from '@tidemark/core';
import { closingEventOfLastLine } from './after.js';
import { openLocated } from './catalog.js';
import type { StoreContext } from './context.js';
import { io, quietly } from './errors.js';
import { CRC_SUFFIX_BYTES, decodeHeaderLine, type LogHeader, readEventLine } from './format.js';
import { type LineFraming, readFraming } from './framing.js';
import { LogScanner } from './scan.js';

/** Bytes of the first step back from the end (and of further reads of the header); each further read doubles. */
const FIRST_STEP_BYTES = 16 * 1024;
/** Bytes of the first read of the header (a few hundred, mostly) when the log is longer than one step. */
const HEADER_FIRST_BYTES = 4 * 1024;
/** The largest step back. */
const MAX_STEP_BYTES = 1024 * 1024;
/** Most bytes held for one answer; past it the full stream answers, with bounded memory. */
const MAX_HELD_BYTES = 8 * 1024 * 1024;
const NEWLINE = 0x0a;

/** Bytes `from..to` of a file, as far as it has them. */
async function readAt(path: string, id: string, handle: Handle, from: number, to: number) {
  const bytes = Buffer.allocUnsafe(to - from);
  let filled = 0;
  while (filled < bytes.length) {
    const n = await io(`reading ${path}`, id, () =>
      handle.read(bytes, filled, bytes.length - filled, from + filled),
    );
    if (n === 0) break;
    filled += n;
  }
  return bytes.subarray(0, filled);
}

type Handle = Awaited<ReturnType<StoreContext['fs']['open']>>;

/** Bytes of the first read back from the end for the last line alone: most lines are far shorter. */
const LAST_LINE_FIRST_BYTES = 4 * 1024;

/**
 * The event on the line that ends the log at `size`, read backwards from there on `handle` (a
 * writer's own descriptor, its lock held: the log the next batch goes to), when that line is the
 * closing line of the batch ending at `seq` (with the line's length); undefined when it is not, or
 * longer than the bound (the caller then asks the whole-log reader). For append's check of `after`
 * by a writer that does not know its last event: it took the lock again after an idle release.
 */
export async function readLastLineEvent(
  path: string,
  id: string,
  handle: FileHandlePort,
  size: number,
  seq: number,
): Promise<{ event: SessionEvent; lineBytes: number } | undefined> {
  let from = size;
  let bytes = Buffer.alloc(0);
  for (let step = LAST_LINE_FIRST_BYTES; from > 0 && size - from < MAX_HELD_BYTES; ) {
    const start = Math.max(0, from - step);
    step = Math.min(2 * step, MAX_STEP_BYTES);
    const more = await readAt(path, id, handle, start, from);
    if (more.length !== from - start) return undefined; // shorter than the writer knows it
    bytes = bytes.length === 0 ? more : Buffer.concat([more, bytes]);
    from = start;
    const found = closingEventOfLastLine(bytes, from === 0, seq);
    if (found !== 'more') return found;
  }
  return undefined;
}

/**
 * The events of `fromSeq..` that are among the last `last` of the log, in order, or undefined when
 * this path cannot vouch for them (then the caller streams the whole log).
 */
export async function readLastEvents(
  ctx: StoreContext,
  id: string,
  fromSeq: number,
  last: number,
): Promise<SessionEvent[] | undefined> {
  const opened = await openLocated(ctx, id);
  if (opened === undefined) return undefined;
  const { paths, handle } = opened;
  ctx.readers.add(handle);
  try {
    const size = await io(`reading ${paths.log}`, id, () => handle.size());
    // The first bytes (the header) and the last (the tail's first step back) read at once: two
    // reads in flight rather than one after the other. One read when they overlap.
    const tailFrom = Math.max(0, size - FIRST_STEP_BYTES);
    const [head, end] = await Promise.all([
      readAt(paths.log, id, handle, 0, size <= FIRST_STEP_BYTES ? size : HEADER_FIRST_BYTES),
      size <= FIRST_STEP_BYTES ? undefined : readAt(paths.log, id, handle, tailFrom, size),
    ]);
    const header = await readHeader(paths.log, id, handle, head);
    if (header === undefined) return undefined;
    const first = { bytes: end ?? head, start: end === undefined ? 0 : tailFrom };
    const tail = await readTailFrom(paths.log, id, handle, header.end, size, fromSeq, last, first);
    if (tail === undefined) return undefined;
    const scanner = new LogScanner({ start: tail.start, formatVersion: header.log.version });
    const batches = scanner.push(tail.bytes);
    const scanEnd = scanner.finish();
    if (scanEnd.problem !== undefined || scanEnd.torn !== undefined) return undefined;
    if (scanEnd.committedBytes !== size) return undefined;
    const events: SessionEvent[] = [];
    for (const batch of batches)
      for (const event of batch.events) if (event.seq >= fromSeq) events.push(event);
    return events.slice(-last);
  } finally {
    if (ctx.readers.delete(handle)) await quietly(() => handle.close());
  }
}

/**
 * The log's header and the offset past it, when it is this session's, of a version whose lines
 * name their batch start. `first`: the file's first bytes, as far as read already.
 */
async function readHeader(
  path: string,
  id: string,
  handle: Handle,
  first: Buffer,
): Promise<{ log: LogHeader; end: number } | undefined> {
  let bytes = first;
  for (let step = 2 * FIRST_STEP_BYTES; ; step = Math.min(2 * step, MAX_STEP_BYTES)) {
    if (bytes.length === 0) return undefined;
    const newline = bytes.indexOf(NEWLINE);
    if (newline >= 0) {
      const decoded = decodeHeaderLine(bytes, 0, newline);
      if (!decoded.ok || decoded.value.meta.id !== id || decoded.value.version < 2) return undefined;
      return { log: decoded.value, end: newline + 1 };
    }
    if (bytes.length > MAX_HELD_BYTES) return undefined;
    const more = await readAt(path, id, handle, bytes.length, bytes.length + step);
    if (more.length === 0) return undefined;
    bytes = Buffer.concat([bytes, more]);
  }
}

const framing: LineFraming = { last: 0, first: undefined, at: undefined, eventEnd: 0 };

/**
 * True when the line `bytes[start..end)` is laid out as a line inside a batch (one that names its
 * batch's first seq): the walk back steps over it without decoding it. The forward scan from the
 * batch start the walk settles on checks every line it stepped over (checksum, event, seq, batch),
 * and that start line itself is decoded; so a damaged line stepped over fails that scan, and the
 * read is left to the full stream, as when the walk met it.
 */
function insideBatch(bytes: Uint8Array, start: number, end: number): boolean {
  return (
    end - start > CRC_SUFFIX_BYTES &&
    readFraming(bytes, start, end - CRC_SUFFIX_BYTES, framing) &&
    framing.first !== undefined
  );
}

/**
 * Reads backwards from `size` to the first line of a batch that starts at or before the first
 * event wanted: the `last`-th event from the end, or `fromSeq`, or the first event of the log.
 * Every batch's first line on the way must be a valid event line of this version (the lines inside
 * batches are checked by the forward scan, see {@link insideBatch}).
 */
async function readTailFrom(
  path: string,
  id: string,
  handle: Handle,
  headerBytes: number,
  size: number,
  fromSeq: number,
  last: number,
  first: { bytes: Buffer; start: number },
): Promise<{ bytes: Buffer; start: { offset: number; nextSeq: number } } | undefined> {
  if (size <= headerBytes) return undefined;
  // The bytes read already from the end, past the header: the first step back.
  if (first.start + first.bytes.length !== size) return undefined; // shorter than it was
  let bufStart = Math.max(headerBytes, first.start);
  let buf = first.bytes.subarray(bufStart - first.start);
  let lineEnd = size - 1; // index of the newline that ends the line being looked at
  let eventsSeen = 0;
  let step = 2 * FIRST_STEP_BYTES;
  const extend = async (): Promise<boolean> => {
    if (bufStart <= headerBytes || size - bufStart >= MAX_HELD_BYTES) return false;
    const from = Math.max(headerBytes, bufStart - step);
    step = Math.min(2 * step, MAX_STEP_BYTES);
    const more = await readAt(path, id, handle, from, bufStart);
    if (more.length !== bufStart - from) return false; // shorter than it was: changing under us
    buf = Buffer.concat([more, buf]);
    bufStart = from;
    return true;
  };
  // A negative index would make lastIndexOf count from the end of the buffer.
  const newlineBefore = (end: number) =>
    end - bufStart <= 0 ? -1 : buf.lastIndexOf(NEWLINE, end - bufStart - 1);
  if (buf.length === 0 || buf[buf.length - 1] !== NEWLINE) return undefined;
  for (;;) {
    // The newline before this line, or the header's end.
    let previous = newlineBefore(lineEnd);
    while (previous < 0 && bufStart > headerBytes) {
      if (!(await extend())) return undefined;
      previous = newlineBefore(lineEnd);
    }
    const lineStart = previous < 0 ? headerBytes : bufStart + previous + 1;
    eventsSeen++;
    if (insideBatch(buf, lineStart - bufStart, lineEnd - bufStart)) {
      if (lineStart === headerBytes) return undefined;
      lineEnd = lineStart - 1;
      continue;
    }
    const line = readEventLine(buf, lineStart - bufStart, lineEnd - bufStart);
    if (line === undefined) return undefined;
    const firstOfBatch = line.start === undefined;
    if (firstOfBatch && (eventsSeen >= last || line.event.seq <= fromSeq || lineStart === headerBytes)) {
      return {
        bytes: buf.subarray(lineStart - bufStart),
        start: { offset: lineStart, nextSeq: line.event.seq },
      };
    }
    if (lineStart === headerBytes) return undefined;
    lineEnd = lineStart - 1;
  }
}
