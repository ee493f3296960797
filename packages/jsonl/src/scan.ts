// Reading a log back: a pure, streaming classifier of the bytes of a session log.
//
// A log is a header line, then committed batches, then possibly a tail that never formed a
// complete batch. The scanner decides, for every byte, which of these it belongs to:
//
//   committed  lines of batches whose closing line (`seq === end`) is present, contiguous in seq
//   torn       everything after the last committed batch when it is only the remains of ONE
//              unfinished write: lines of an incomplete batch, a line without its newline, a
//              run of NUL bytes or garbage, in any mix, as long as no valid line of another batch
//              follows
//   corrupt    damage (a bad line, a seq gap, a broken header) that valid data of another batch
//              follows: that is not a crash signature but lost committed data, and never cut
//
// Why one write: with strict durability a batch is fdatasynced before the next one is written,
// so after a crash only the last write can be incomplete. Per ALICE, that write may come back in
// any state: cut at any byte, with zeros or garbage in place of some of its pages, even with its
// later lines present and earlier ones not. All of those are recognised as torn: every valid
// line after the damage has the torn batch's `end` and a seq inside it.
import { DEFAULT_MAX_EVENT_BYTES, type SessionEvent } from '@tidemark/core';
import { decodeFramedLines, type FramedLine, frameLine } from './batch-decode.js';
import { type DecodedLine, decodeHeaderLine, type LogHeader, readEventLine } from './format.js';

/** Why the tail of a log is torn. */
export type TornReason =
  /** complete lines of a batch whose closing line is missing */
  | 'partial-batch'
  /** a valid line that lacks its newline at the end of the file */
  | 'no-newline'
  /** an unterminated, invalid line at the end of the file */
  | 'partial-line'
  /** a run of NUL bytes (an appended region the disk never filled) */
  | 'nul'
  /** a complete line that is not a valid line (checksum, JSON, shape or seq) */
  | 'garbage';

/** The torn fragment at the end of a log: bytes `offset..offset+length` are to be set aside. */
export interface TornTail {
  offset: number;
  length: number;
  reason: TornReason;
}

/** Why a log cannot be read as written. */
export type ProblemKind = 'corrupt' | 'unsupported-format';

/** A fault in committed data (CORRUPT) or a header newer than this code (UNSUPPORTED_FORMAT). */
export interface ScanProblem {
  kind: ProblemKind;
  /** Byte offset of the first damaged byte. */
  offset: number;
  /** Seq expected at that offset, when known. */
  seq?: number;
  message: string;
  /** Version found, for `unsupported-format`. */
  version?: number;
}

/** A committed batch. */
export interface ScanBatch {
  events: SessionEvent[];
  /** Append time recorded on the closing line. */
  at: string;
  /** Offset of the batch's first byte. */
  offset: number;
  /** Offset just past the batch's last newline. */
  endOffset: number;
}

/** What the scan says once every byte was seen. */
export interface ScanEnd {
  /** The header, when it could be read (absent in headerless scans and for a broken header). */
  header?: LogHeader;
  /** Offset just past the last committed batch (or the header): where a repair truncates to. */
  committedBytes: number;
  /** The seq the next batch must start with. */
  nextSeq: number;
  /** Number of events in committed batches seen by this scan. */
  eventCount: number;
  /** Present when the log ends in a torn fragment. */
  torn?: TornTail;
  /** Present when the log is corrupt or of a newer format; then nothing after `offset` is trusted. */
  problem?: ScanProblem;
  /** Total bytes seen. */
  totalBytes: number;
}

/** Where a headerless scan starts: a known-good batch boundary from a summary sidecar. */
export interface ScanStart {
  offset: number;
  nextSeq: number;
}

/** Options of {@link LogScanner}. */
export interface ScanOptions {
  /** Skip the header and start at this boundary (incremental summary rebuild). */
  start?: ScanStart;
  /** Longest line accepted; longer ones are garbage (bounds memory). Default 16 MiB + 64 KiB. */
  maxLineBytes?: number;
  /**
   * Format version of a headerless scan's log (a scan from the header reads it there). Default 1,
   * whose lines do not say where their batch starts (see {@link LogScanner}).
   */
  formatVersion?: number;
}

const NEWLINE = 0x0a;
/**
 * Longest line read: the largest event core accepts plus room for the line's framing. A header
 * line is bounded well below it by core's limits on summary fields (tags, text, `attrs`).
 */
const DEFAULT_MAX_LINE_BYTES = DEFAULT_MAX_EVENT_BYTES + 64 * 1024;

interface Pending {
  offset: number;
  end: number;
  events: SessionEvent[];
}

/**
 * A streaming log classifier. Feed chunks with {@link LogScanner.push}, which returns the batches
 * committed so far; call {@link LogScanner.finish} at end of file. Memory is bounded by the
 * largest batch plus the longest line, never by the log's length.
 */
export class LogScanner {
  private readonly maxLineBytes: number;
  private expectHeader: boolean;
  private header: LogHeader | undefined;
  private headerEnd = 0;
  /** Absolute offset of the first byte not yet consumed into a line. */
  private offset: number;
  /** Bytes of the current unterminated line. */
  private carry: Uint8Array[] = [];
  private carryBytes = 0;
  /** The current unterminated line grew past the limit: its bytes were dropped. */
  private carryOverflow = false;
  private carryAllNul = true;
  private committedBytes: number;
  private nextSeq: number;
  private eventCount = 0;
  private pending: Pending | undefined;
  /** First anomaly after the committed prefix; from then on lines are only classified. */
  private damage: { offset: number; reason: TornReason } | undefined;
  /** The `end` shared by every valid line allowed after the damage (the torn batch's end). */
  private tornEnd: number | undefined;
  /** The highest seq of a valid line seen after the damage. */
  private lastTornSeq = -1;
  private problem: ScanProblem | undefined;
  /** From version 2 every line but a batch's first names the batch's first seq (`start`). */
  private formatVersion: number;
  /**
   * Lines of the next batch taken in by their framing alone while it is on course to commit; their
   * events are parsed together when its closing line comes (see batch-decode.ts). They have not
   * changed the scan's state: whatever else happens, they are first decided one by one.
   */
  private framed: FramedLine[] = [];

  constructor(options: ScanOptions = {}) {
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.formatVersion = options.formatVersion ?? 1;
    this.expectHeader = options.start === undefined;
    this.offset = options.start?.offset ?? 0;
    this.committedBytes = this.offset;
    this.nextSeq = options.start?.nextSeq ?? 0;
  }

  /** The header, once its line was read. */
  get headerLine(): { header: LogHeader; endOffset: number } | undefined {
    return this.header === undefined ? undefined : { header: this.header, endOffset: this.headerEnd };
  }

  /** True once a problem was found: later bytes are ignored. */
  get failed(): boolean {
    return this.problem !== undefined;
  }

  /** Feeds the next bytes of the file; returns the batches that this chunk completed. */
  push(chunk: Uint8Array): ScanBatch[] {
    const out: ScanBatch[] = [];
    let from = 0;
    // Every step that decides a line other than by framing it first decides the framed lines
    // before it (settleFramed); when that finds a problem, the scan ends there, as it would have
    // line by line, and the line at hand is left unread.
    while (from < chunk.length && this.problem === undefined) {
      const nl = chunk.indexOf(NEWLINE, from);
      if (nl === -1) {
        if (!this.settleFramed(out)) this.addCarry(chunk.subarray(from));
        break;
      }
      const lineStart = this.offset;
      const lineLength = this.carryBytes + (nl - from);
      if (this.carryOverflow || lineLength > this.maxLineBytes) {
        if (this.settleFramed(out)) break;
        this.onBadLine(lineStart, 'garbage');
      } else if (this.carryBytes === 0) {
        if (!this.onLine(chunk, from, nl, lineStart, out)) break;
      } else {
        this.addCarry(chunk.subarray(from, nl));
        const line = this.takeCarry();
        if (!this.onLine(line, 0, line.length, lineStart, out)) break;
      }
      this.resetCarry();
      this.offset = lineStart + lineLength + 1;
      from = nl + 1;
    }
    // Framed lines point into `chunk`, which the caller may reuse: decided now, one by one.
    this.settleFramed(out);
    return out;
  }

  /** Ends the scan: classifies what remains. */
  finish(): ScanEnd {
    const totalBytes = this.offset + this.carryBytes;
    if (this.problem === undefined) {
      if (this.expectHeader) {
        this.problem = {
          kind: 'corrupt',
          offset: 0,
          message: totalBytes === 0 ? 'the log is empty (no header)' : 'the header line is incomplete',
        };
      } else if (this.carryBytes > 0 || this.carryOverflow) {
        const reason = this.classifyCarry();
        this.damage ??= { offset: this.offset, reason };
      } else if (this.pending !== undefined && this.damage === undefined) {
        this.damage = { offset: this.pending.offset, reason: 'partial-batch' };
      }
    }
    const end: ScanEnd = {
      committedBytes: this.committedBytes,
      nextSeq: this.nextSeq,
      eventCount: this.eventCount,
      totalBytes,
    };
    if (this.header !== undefined) end.header = this.header;
    if (this.problem !== undefined) end.problem = this.problem;
    else if (totalBytes > this.committedBytes) {
      const reason = this.damage?.reason ?? (this.pending !== undefined ? 'partial-batch' : 'garbage');
      end.torn = { offset: this.committedBytes, length: totalBytes - this.committedBytes, reason };
    }
    return end;
  }

  private classifyCarry(): TornReason {
    if (this.carryOverflow) return this.carryAllNul ? 'nul' : 'partial-line';
    if (this.carryAllNul) return 'nul';
    const line = this.takeCarry();
    return readEventLine(line, 0, line.length) !== undefined ? 'no-newline' : 'partial-line';
  }

  private addCarry(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    if (this.carryAllNul) this.carryAllNul = bytes.every((b) => b === 0);
    this.carryBytes += bytes.length;
    if (this.carryOverflow) return;
    if (this.carryBytes > this.maxLineBytes) {
      this.carryOverflow = true;
      this.carry = [];
      return;
    }
    // Copy: the caller may reuse its read buffer.
    this.carry.push(Buffer.from(bytes));
  }

  private takeCarry(): Uint8Array {
    if (this.carry.length === 1) return this.carry[0]!;
    const joined = Buffer.concat(this.carry);
    this.carry = [joined];
    return joined;
  }

  private resetCarry(): void {
    this.carry = [];
    this.carryBytes = 0;
    this.carryOverflow = false;
    this.carryAllNul = true;
  }

  /** Decides one complete line; false when it was left unread (see push). */
  private onLine(bytes: Uint8Array, start: number, end: number, offset: number, out: ScanBatch[]): boolean {
    if (this.expectHeader) {
      this.expectHeader = false;
      const header = decodeHeaderLine(bytes, start, end);
      if (header.ok) {
        this.header = header.value;
        this.formatVersion = header.value.version;
        this.committedBytes = offset + (end - start) + 1;
        this.headerEnd = this.committedBytes;
      } else if (header.defect === 'newer-version') {
        this.problem = {
          kind: 'unsupported-format',
          offset,
          version: header.version,
          message: `format version ${header.version} is newer than this code knows`,
        };
      } else {
        this.problem = { kind: 'corrupt', offset, message: `bad header: ${header.detail}` };
      }
      return true;
    }
    if (this.damage === undefined && this.pending === undefined) {
      const framed = frameLine(bytes, start, end, offset);
      if (framed !== undefined && this.continuesFramed(framed)) {
        this.framed.push(framed);
        return framed.seq !== framed.last || this.closeFramed(out);
      }
      if (this.settleFramed(out)) return false;
    }
    this.onEventLine(bytes, start, end, offset, out);
    return true;
  }

  /** True when `line` is the next line of a batch on course to commit (its framing says so). */
  private continuesFramed(line: FramedLine): boolean {
    const first = this.framed[0];
    if (first === undefined) return line.seq === this.nextSeq && line.last >= line.seq;
    return line.seq === first.seq + this.framed.length && line.last === first.last;
  }

  /**
   * The framed batch's closing line is in: its events in one parse, or its lines one by one.
   * False when one of them had a problem (the scan ends there: see settleFramed).
   */
  private closeFramed(out: ScanBatch[]): boolean {
    const lines = this.framed;
    const events = decodeFramedLines(lines);
    if (events === undefined) return !this.settleFramed(out);
    this.framed = [];
    const first = lines[0]!;
    const last = lines[lines.length - 1]!;
    const endOffset = last.offset + (last.end - last.start) + 1;
    out.push({ events, at: last.at!, offset: first.offset, endOffset });
    this.nextSeq = last.seq + 1;
    this.eventCount += events.length;
    this.committedBytes = endOffset;
    return true;
  }

  /**
   * Decides the framed lines one by one, as if they had never been set aside. True when that
   * found a problem: then the scan ends just past the line that has it, as it would have ended.
   */
  private settleFramed(out: ScanBatch[]): boolean {
    if (this.framed.length === 0) return false;
    const lines = this.framed;
    this.framed = [];
    for (const line of lines) {
      this.onEventLine(line.bytes, line.start, line.end, line.offset, out);
      if (this.problem !== undefined) {
        this.offset = line.offset + (line.end - line.start) + 1;
        return true;
      }
    }
    return false;
  }

  /** An event line decided on its own (readEventLine), against the scan's state. */
  private onEventLine(bytes: Uint8Array, start: number, end: number, offset: number, out: ScanBatch[]): void {
    const decoded = readEventLine(bytes, start, end);
    if (decoded === undefined) {
      this.onBadLine(offset, isNulRun(bytes, start, end) ? 'nul' : 'garbage');
      return;
    }
    if (this.damage !== undefined) {
      this.onLineAfterDamage(decoded);
      return;
    }
    const { event, end: last } = decoded;
    const pending = this.pending;
    const expected = this.nextSeq + (pending?.events.length ?? 0);
    if (pending === undefined && event.seq !== this.nextSeq) {
      // A complete, checksummed line with the wrong seq right after committed data: not a crash
      // signature (a crash cannot invent a valid line), so the log lost or duplicated events.
      this.problem = {
        kind: 'corrupt',
        offset,
        seq: this.nextSeq,
        message: `seq gap: expected seq ${this.nextSeq}, found ${event.seq}`,
      };
      return;
    }
    if (pending !== undefined && (event.seq !== expected || last !== pending.end)) {
      // The unfinished batch is interrupted by a line that does not continue it.
      this.onBadLine(pending.offset, 'partial-batch');
      this.onLineAfterDamage(decoded);
      return;
    }
    const batch = pending ?? { offset, end: last, events: [] };
    batch.events.push(event);
    if (event.seq === last) {
      const endOffset = offset + (end - start) + 1;
      out.push({ events: batch.events, at: decoded.at!, offset: batch.offset, endOffset });
      this.nextSeq = last + 1;
      this.eventCount += batch.events.length;
      this.committedBytes = endOffset;
      this.pending = undefined;
    } else {
      this.pending = batch;
    }
  }

  private onBadLine(offset: number, reason: TornReason): void {
    if (this.expectHeader) {
      this.problem = { kind: 'corrupt', offset, message: 'bad header: the first line is too long' };
      return;
    }
    if (this.damage !== undefined) return;
    this.damage = { offset, reason };
    if (this.pending !== undefined) {
      this.tornEnd = this.pending.end;
      this.lastTornSeq = this.nextSeq + this.pending.events.length - 1;
    }
    this.pending = undefined;
  }

  private onLineAfterDamage(line: DecodedLine): void {
    // After damage only lines of the one unfinished batch may follow.
    // Those lines sit where the write put them, after the damaged bytes, so none of them can be
    // the batch's first line (it starts the write) and their seqs only grow.
    this.tornEnd ??= line.end;
    const { seq } = line.event;
    // Version 2 lines also say where their batch began: the torn batch begins at the committed
    // end. A line of a batch of its own (a one-event batch has no `start`) after damage means the
    // damage hit committed data, even where `end` alone would fit a torn batch.
    const startsAtTear = this.formatVersion < 2 || line.start === this.nextSeq;
    const inTornBatch =
      startsAtTear &&
      line.end === this.tornEnd &&
      seq > this.nextSeq &&
      seq <= line.end &&
      seq > this.lastTornSeq;
    if (inTornBatch) {
      this.lastTornSeq = seq;
      return;
    }
    this.problem = {
      kind: 'corrupt',
      offset: this.damage!.offset,
      seq: this.nextSeq,
      message: `damaged data (${this.damage!.reason}) is followed by valid events (seq ${line.event.seq}): committed data was lost`,
    };
  }
}

function isNulRun(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (bytes[i] !== 0) return false;
  return true;
}

/** Everything a whole-log scan finds. */
export interface ScanReport extends ScanEnd {
  /** The committed batches, in order. */
  batches: ScanBatch[];
}

/**
 * Classifies a whole log held in memory: header, committed batches, torn tail, or the problem
 * that makes it unreadable. Never throws; the store turns problems into CORRUPT or
 * UNSUPPORTED_FORMAT errors. For files of any size use {@link LogScanner} over chunks instead.
 */
export function scanLog(bytes: Uint8Array, options: ScanOptions = {}): ScanReport {
  const scanner = new LogScanner(options);
  const batches = scanner.push(bytes);
  return { ...scanner.finish(), batches };
}

/**
 * Decides what a torn tail is when the log's summary sidecar recorded `committedSize` bytes as
 * committed. A sidecar is only ever written once the bytes it counts are durable (and after the
 * append that wrote them was acknowledged), so a tear that starts before `committedSize` is not an
 * unfinished write: committed bytes were damaged. From the bytes alone the two can look the same
 * (a damaged line followed by an intact one-line batch reads like a batch whose first line was
 * torn), and repairing would quietly drop acknowledged events. Pure.
 * @returns `end` unchanged, or with the tear turned into a CORRUPT problem at its offset.
 */
export function settleTear(end: ScanEnd, committedSize: number | undefined): ScanEnd {
  const { torn } = end;
  if (torn === undefined || end.problem !== undefined || committedSize === undefined) return end;
  if (torn.offset >= committedSize) return end;
  const { torn: _settled, ...rest } = end;
  return {
    ...rest,
    problem: {
      kind: 'corrupt',
      offset: torn.offset,
      seq: end.nextSeq,
      message: `damaged data (${torn.reason}) at byte ${torn.offset}, inside the ${committedSize} bytes the summary recorded as committed: committed data was lost`,
    },
  };
}
