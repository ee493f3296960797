// What every subject and workload of the peers suite shares: the sizes (from the environment, so
// a quick run is one variable away), the event every store writes, and the statistics.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const env = (name, fallback) => Number(process.env[name] ?? fallback);

export const SIZES = {
  rounds: env('BENCH_ROUNDS', 5),
  w1Appends: env('BENCH_W1_APPENDS', 100),
  w2Turns: env('BENCH_W2_TURNS', 40),
  w3Events: env('BENCH_W3_EVENTS', 10_000),
  w3Loads: env('BENCH_W3_LOADS', 3),
  w4Sizes: (process.env.BENCH_W4_SIZES ?? '5000,100000').split(',').map(Number),
  w4Page: env('BENCH_W4_PAGE', 50),
  w4Burst: env('BENCH_W4_BURST', 5),
  w5Sessions: env('BENCH_W5_SESSIONS', 64),
  w5Appends: env('BENCH_W5_APPENDS', 10),
};

export const TIME = '2026-01-01T00:00:00.000Z';
export const TURN = 10;

/** One agent event as every subject stores it: about 150 bytes of JSON, like a short model step. */
export function event(seq, last = false) {
  return {
    seq,
    type: last ? 'turn/end' : 'tool/call',
    time: TIME,
    data: { role: 'assistant', text: `step ${seq} of the agent`.padEnd(100, '.'), tokens: seq % 97 },
  };
}

/** `count` events from `seq`; the last one closes a turn when `closes` (W2's 10-event turns). */
export function batch(seq, count, closes = false) {
  return Array.from({ length: count }, (_, i) => event(seq + i, closes && i === count - 1));
}

export const now = () => performance.now();

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export async function timed(work) {
  const t = now();
  await work();
  return now() - t;
}

/** Bytes of the files under `path` (a file or a directory tree). */
export function bytesUnder(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + bytesUnder(join(path, name)), 0);
}

/** A session id that sorts by creation order, as all the stores' seeded sessions are numbered. */
export const sessionId = (prefix, i) => `${prefix}${String(i).padStart(6, '0')}`;
