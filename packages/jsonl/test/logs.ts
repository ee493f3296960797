// Builders of log bytes for scanner tests: real lines from the real encoders.
import { prepareBatch, type SessionEvent } from '@tidemark/core';
import { crc32Utf8, encodeBatch, encodeHeader } from '../src/index.js';

export const CREATED = '2026-01-01T00:00:00.000Z';
export const AT = '2026-01-01T00:00:01.000Z';

/** The header line of session `id`. */
export function headerLine(id = 's'): string {
  return encodeHeader({ id, createdAt: CREATED }, {});
}

/** The lines of one batch. */
export function batchLines(events: SessionEvent[], at = AT): string {
  const prepared = prepareBatch(events);
  return encodeBatch(prepared, events[events.length - 1]!.seq, at);
}

/** A whole log: header then the batches in order. */
export function logOf(batches: SessionEvent[][], id = 's'): Buffer {
  return Buffer.from(headerLine(id) + batches.map((b) => batchLines(b)).join(''), 'utf8');
}

/** A line body (an unterminated JSON object, as text) sealed with its checksum: the line's bytes, no newline. */
export function sealLine(body: string): Buffer {
  return Buffer.from(`${body},"crc":"${crc32Utf8(body).toString(16).padStart(8, '0')}"}`, 'utf8');
}
