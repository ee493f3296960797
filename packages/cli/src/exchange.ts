// The export/import stream: one header line with meta and summary fields, then one event per
// line. Pure encoding and decoding; I/O lives in the commands.
import {
  assertValidId,
  type JsonValue,
  type ParentRef,
  prepareEvent,
  type SessionEvent,
  type SessionSummary,
  TidemarkError,
} from '@tidemark/core';

/** Value of the header's `format` field. */
export const EXPORT_FORMAT = 'tidemark-export';
/** Version of the export stream this code writes and reads. */
export const EXPORT_VERSION = 1;

/** The first line of an export. */
export interface ExportHeader {
  format: typeof EXPORT_FORMAT;
  version: number;
  meta: { id: string; createdAt: string; cwd?: string; parent?: ParentRef };
  summary: {
    updatedAt: string;
    eventCount: number;
    title?: string;
    firstPrompt?: string;
    tags?: string[];
    attrs?: { [key: string]: JsonValue };
  };
}

/** The header line (without newline) of a session's export. */
export function encodeExportHeader(summary: SessionSummary): string {
  const header: ExportHeader = {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    meta: {
      id: summary.id,
      createdAt: summary.createdAt,
      ...(summary.cwd !== undefined && { cwd: summary.cwd }),
      ...(summary.parent !== undefined && { parent: summary.parent }),
    },
    summary: {
      updatedAt: summary.updatedAt,
      eventCount: summary.eventCount,
      ...(summary.title !== undefined && { title: summary.title }),
      ...(summary.firstPrompt !== undefined && { firstPrompt: summary.firstPrompt }),
      ...(summary.tags !== undefined && { tags: summary.tags }),
      ...(summary.attrs !== undefined && { attrs: summary.attrs }),
    },
  };
  return JSON.stringify(header);
}

/** An event line (without newline): the event's own serialization. */
export function encodeExportEvent(event: SessionEvent): string {
  const { seq, type, time, data } = event;
  return JSON.stringify({ seq, type, time, data });
}

/** A parsed export. */
export interface ParsedExport {
  header: ExportHeader;
  events: SessionEvent[];
}

function invalid(line: number, message: string): TidemarkError {
  return new TidemarkError('INVALID', `import: line ${line}: ${message}`, {
    location: { row: `line ${line}` },
  });
}

/**
 * Parses an export stream. Pure. Every event is validated like an append would, seqs must run
 * 0, 1, 2, ... and the count must match the header.
 * @throws TidemarkError INVALID naming the line (a missing or malformed `version` too),
 * UNSUPPORTED_FORMAT for a newer version.
 */
export function parseExport(text: string): ParsedExport {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  if (lines.length === 0) throw invalid(1, 'empty input: expected a header line');
  let header: ExportHeader;
  try {
    header = JSON.parse(lines[0]!) as ExportHeader;
  } catch {
    throw invalid(1, 'the header is not JSON');
  }
  if (typeof header !== 'object' || header === null || header.format !== EXPORT_FORMAT) {
    throw invalid(1, `not a tidemark export (expected "format": "${EXPORT_FORMAT}")`);
  }
  const version: unknown = header.version;
  if (version === undefined) throw invalid(1, `the header has no "version" (expected ${EXPORT_VERSION})`);
  if (!(typeof version === 'number' && Number.isSafeInteger(version) && version >= 1)) {
    throw invalid(1, `the header's version must be a positive integer, got ${JSON.stringify(version)}`);
  }
  if (version > EXPORT_VERSION) {
    throw new TidemarkError(
      'UNSUPPORTED_FORMAT',
      `import: export version ${version} is newer than this code knows (${EXPORT_VERSION})`,
    );
  }
  if (
    typeof header.meta !== 'object' ||
    header.meta === null ||
    typeof header.summary !== 'object' ||
    header.summary === null
  ) {
    throw invalid(1, 'the header needs meta and summary objects');
  }
  assertValidId(header.meta.id, 'import: meta.id');
  const announced: unknown = header.summary.eventCount;
  if (announced !== undefined && !(Number.isSafeInteger(announced) && (announced as number) >= 0)) {
    throw invalid(
      1,
      `the header's summary.eventCount must be a count of events, got ${JSON.stringify(announced)}`,
    );
  }
  const events: SessionEvent[] = [];
  for (let i = 1; i < lines.length; i++) {
    let value: unknown;
    try {
      value = JSON.parse(lines[i]!);
    } catch {
      throw invalid(i + 1, 'not JSON');
    }
    let prepared: ReturnType<typeof prepareEvent>;
    try {
      prepared = prepareEvent(value, `event`);
    } catch (error) {
      throw invalid(i + 1, error instanceof Error ? error.message : String(error));
    }
    if (prepared.event.seq !== events.length)
      throw invalid(i + 1, `expected seq ${events.length}, found ${prepared.event.seq}`);
    events.push(prepared.event);
  }
  if (typeof header.summary.eventCount === 'number' && header.summary.eventCount !== events.length) {
    throw invalid(
      lines.length,
      `the header announces ${header.summary.eventCount} events but ${events.length} follow (truncated input?)`,
    );
  }
  return { header, events };
}
