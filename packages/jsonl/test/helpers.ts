import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionEvent } from '@tidemark/core';

/** Temporary directories removed by {@link removeTempDirs}. */
const made: string[] = [];

/** A fresh empty directory for a test store. */
export function tempDir(prefix = 'tidemark-jsonl-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes every directory made by {@link tempDir}. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

const T = '2026-01-01T00:00:00.000Z';

/** An event with seq `seq`; `type` defaults to a non-boundary type. */
export function ev(
  seq: number,
  type = 'user/message',
  data: SessionEvent['data'] = { text: `m${seq}` },
): SessionEvent {
  return { seq, type, time: T, data };
}

/** Events `from..from+count-1`; the last one is a boundary when `closeTurn`. */
export function evs(from: number, count: number, closeTurn = false): SessionEvent[] {
  return Array.from({ length: count }, (_, i) =>
    ev(from + i, closeTurn && i === count - 1 ? 'turn/end' : 'user/message'),
  );
}
