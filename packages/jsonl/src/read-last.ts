// read({ last }): the newest events of a log without reading it from the start. The log is read
// backwards from its end, line by line, to the first line of a batch far enough back; then the
// scanner runs forward from there, as it runs from a sidecar's boundary in a summary rebuild. This
// path answers only when that forward scan ends clean at the end of the file: anything else (a
// torn or damaged tail, a log of format 1, whose lines do not say where their batch starts, a log
// changing under the read, more bytes than the bound) is left to the full stream (reader.ts), which
// knows how to judge it. So the answer is always the one the full stream gives for a clean log.
import type { FileHandlePort, SessionEvent } from '@tidemark/core';
import { closingEventOfLastLine } from './after.js';
import { locate } from './catalog.js';
import type { StoreContext } from './context.js';
import { io, ioOrAbsent, quietly } from './errors.js';
import { decodeHeaderLine, type LogHeader, readEventLine } from './format.js';
import { LogScanner } from './scan.js';

/** Bytes of the first read of the header and of the first step back from the end; each further read doubles. */
const FIRST_STEP_BYTES = 16 * 1024;
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
  const paths = await locate(ctx, id);
  if (paths === undefined) return undefined;
  const handle = await ioOrAbsent(`opening ${paths.log}`, id, () => ctx.fs.open(paths.log, 'r'));
  if (handle === undefined) return undefined;
  ctx.readers.add(handle);
  try {
    const header = await readHeader(paths.log, id, handle);
    if (header === undefined) return undefined;
    const size = await io(`reading ${paths.log}`, id, () => handle.size());
    const tail = await readTailFrom(paths.log, id, handle, header.end, size, fromSeq, last);
    if (tail === undefined) return undefined;
    const scanner = new LogScanner({ start: tail.start, formatVersion: header.log.version });
    const batches = scanner.push(tail.bytes);
    const end = scanner.finish();
    if (end.problem !== undefined || end.torn !== undefined) return undefined;
    if (end.committedBytes !== size) return undefined;
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
 * name their batch start.
 */
async function readHeader(
  path: string,
  id: string,
  handle: Handle,
): Promise<{ log: LogHeader; end: number } | undefined> {
  let bytes = Buffer.alloc(0);
  for (let step = FIRST_STEP_BYTES; ; step = Math.min(2 * step, MAX_STEP_BYTES)) {
    const more = await readAt(path, id, handle, bytes.length, bytes.length + step);
    if (more.length === 0) return undefined;
    bytes = Buffer.concat([bytes, more]);
    const newline = bytes.indexOf(NEWLINE);
    if (newline >= 0) {
      const decoded = decodeHeaderLine(bytes, 0, newline);
      if (!decoded.ok || decoded.value.meta.id !== id || decoded.value.version < 2) return undefined;
      return { log: decoded.value, end: newline + 1 };
    }
    if (bytes.length > MAX_HELD_BYTES) return undefined;
  }
}

/**
 * Reads backwards from `size` to the first line of a batch that starts at or before the first
 * event wanted: the `last`-th event from the end, or `fromSeq`, or the first event of the log.
 * Every line on the way must be a valid event line of this version.
 */
async function readTailFrom(
  path: string,
  id: string,
  handle: Handle,
  headerBytes: number,
  size: number,
  fromSeq: number,
  last: number,
): Promise<{ bytes: Buffer; start: { offset: number; nextSeq: number } } | undefined> {
  if (size <= headerBytes) return undefined;
  let bufStart = size;
  let buf = Buffer.alloc(0);
  let lineEnd = size - 1; // index of the newline that ends the line being looked at
  let eventsSeen = 0;
  let step = FIRST_STEP_BYTES;
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
  if (!(await extend()) || buf[buf.length - 1] !== NEWLINE) return undefined;
  for (;;) {
    // The newline before this line, or the header's end.
    let previous = newlineBefore(lineEnd);
    while (previous < 0 && bufStart > headerBytes) {
      if (!(await extend())) return undefined;
      previous = newlineBefore(lineEnd);
    }
    const lineStart = previous < 0 ? headerBytes : bufStart + previous + 1;
    const line = readEventLine(buf, lineStart - bufStart, lineEnd - bufStart);
    if (line === undefined) return undefined;
    eventsSeen++;
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
