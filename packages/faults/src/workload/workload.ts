import type { CreateInit, JsonValue, SessionEvent, SummaryPatch } from '@tidemark/core';

/** One step of the harness workload. Session keys name fixed ids so that runs are repeatable. */
export type WorkloadStep =
  | { kind: 'create'; key: string; init: Omit<CreateInit, 'id'> }
  /**
   * With `clockAt`, the store's clock reads that instant during the call ({@link holdClock}), as
   * when changes land in one millisecond: it gives sessions the same `updatedAt` on every machine.
   */
  | { kind: 'append'; key: string; types: readonly string[]; clockAt?: string }
  /**
   * Appends to different sessions issued at once, each checked as its own `append` (a backend
   * with group commit writes them in one shared commit). Only for engine drivers: the crash sweeps
   * of fs drivers follow one append in flight at a time.
   */
  | { kind: 'appendTogether'; appends: readonly { key: string; types: readonly string[] }[] }
  | { kind: 'update'; key: string; patch: SummaryPatch }
  | { kind: 'has'; key: string }
  | { kind: 'load'; key: string }
  /** `list`; with `limit`, walked page by page by its cursors (each session once across the pages). */
  | { kind: 'list'; cwd?: string; limit?: number }
  | { kind: 'delete'; key: string }
  /**
   * The write path (write-path.ts): push `types` through the session's SessionWriter (a new one at
   * seq 0 for a session without events, else the one `resume` or `fork` returned), then end with
   * `flush()`, `close()` or `abandon()`.
   */
  | { kind: 'write'; key: string; types: readonly string[]; end: 'flush' | 'close' | 'abandon' }
  /** `resume(id)`; with `closeTurn`, an interrupted turn is closed by the resume hook's batch. */
  | { kind: 'resume'; key: string; closeTurn: boolean }
  /** `fork(id, atSeq)` into the session `child`, whose writer the next `write` of `child` uses. */
  | { kind: 'fork'; key: string; child: string; atSeq: number };

/** The id a workload key stands for. */
export function sessionId(key: string): string {
  return `sess-${key}`;
}

/** cwd of each session, so that `list({ cwd })` is exercised. */
export const WORKLOAD_CWDS: Record<string, string | undefined> = {
  a: '/work/proj-a',
  b: '/work/proj-b',
  c: undefined,
  z: '/work/proj-a',
};

/**
 * The instant the store's clock reads during the first appends of `a` and `b` (`clockAt`): ahead
 * of the real clock, so every later change moves a session's `updatedAt` exactly 1 ms past its
 * last (core's nextUpdatedAt) whatever the speed of the machine, and sessions share `updatedAt`s
 * deterministically. `a` (first append at this) and `b` (2 ms later) then tie from step 7 to 11
 * (the paged list of step 9 among them) and from step 16 to 18; in GROUP_COMMIT_WORKLOAD from step
 * 7 to the end.
 */
export const TIED_CLOCK = '2099-01-01T00:00:00.000Z';

/**
 * A small agent workload (ACE/CrashMonkey: most crash bugs need three operations or fewer): three
 * sessions, multi-event turns, updates, lists (one walked page by page with `limit: 1`), an
 * interrupted turn, a delete. 7 appends. Sessions `a` and `b` share `updatedAt`s ({@link TIED_CLOCK}).
 */
export const AGENT_WORKLOAD: readonly WorkloadStep[] = [
  { kind: 'create', key: 'a', init: { cwd: WORKLOAD_CWDS.a!, title: 'fix the build' } },
  {
    kind: 'append',
    key: 'a',
    types: ['user/message', 'tool/call', 'tool/result', 'turn/end'],
    clockAt: TIED_CLOCK,
  },
  { kind: 'create', key: 'b', init: { cwd: WORKLOAD_CWDS.b! } },
  { kind: 'update', key: 'b', patch: { tags: ['pending'] } },
  {
    kind: 'append',
    key: 'b',
    types: ['user/message', 'assistant/message', 'turn/end'],
    clockAt: '2099-01-01T00:00:00.002Z',
  },
  { kind: 'update', key: 'a', patch: { title: 'fix the build (ci)', tags: ['ci'] } },
  { kind: 'append', key: 'a', types: ['user/message', 'tool/call', 'tool/result', 'turn/end'] },
  { kind: 'has', key: 'a' },
  { kind: 'list', limit: 1 },
  { kind: 'create', key: 'c', init: {} },
  { kind: 'append', key: 'c', types: ['user/message', 'turn/end'] },
  { kind: 'append', key: 'b', types: ['user/message', 'tool/call'] },
  { kind: 'update', key: 'c', patch: { title: 'scratch', tags: ['tmp'] } },
  { kind: 'load', key: 'b' },
  { kind: 'delete', key: 'c' },
  { kind: 'append', key: 'a', types: ['user/message', 'turn/end'] },
  { kind: 'list', cwd: WORKLOAD_CWDS.a! },
  { kind: 'has', key: 'c' },
  { kind: 'append', key: 'b', types: ['tool/result', 'turn/end'] },
  { kind: 'load', key: 'a' },
];

/**
 * {@link AGENT_WORKLOAD} with appends to different sessions issued at once (contract §6.5 group
 * commit): the step sweep then fails every statement of a shared commit, the first batch of a
 * session among them, and each batch must still be all or nothing on its own.
 */
export const GROUP_COMMIT_WORKLOAD: readonly WorkloadStep[] = [
  ...AGENT_WORKLOAD.slice(0, 10), // up to `create c`
  {
    kind: 'appendTogether',
    appends: [
      { key: 'c', types: ['user/message', 'turn/end'] },
      { key: 'b', types: ['user/message', 'tool/call'] },
      { key: 'a', types: ['user/message', 'tool/call'] },
    ],
  },
  ...AGENT_WORKLOAD.slice(12, 15), // update c, load b, delete c
  { kind: 'list', cwd: WORKLOAD_CWDS.a! },
  { kind: 'has', key: 'c' },
  {
    kind: 'appendTogether',
    appends: [
      { key: 'a', types: ['tool/result', 'turn/end'] },
      { key: 'b', types: ['tool/result', 'turn/end'] },
    ],
  },
  { kind: 'load', key: 'a' },
];

/**
 * The event a workload writes at `seq` of session `key`: deterministic, so that a parent process
 * can check what a killed child acknowledged byte for byte. `attempt` varies the payload of a
 * batch appended again after a failure that left it absent.
 */
export function workloadEvent(key: string, seq: number, type: string): SessionEvent {
  const time = new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString();
  let data: JsonValue;
  switch (type) {
    case 'user/message':
      // Non-ASCII text in every turn: a cut inside a multi-byte character is one of the tails a
      // crash sweep must produce (the default branch below only reaches first batches).
      data = { role: 'user', text: `request ${seq} in ${key}: run the tests — fix what fails ✓` };
      break;
    case 'tool/call':
      data = {
        tool: 'bash',
        input: { command: `npm test -- --filter=${key}${seq}` },
        callId: `call-${key}-${seq}`,
      };
      break;
    case 'tool/result':
      data = { callId: `call-${key}-${seq - 1}`, exitCode: seq % 2, output: 'x'.repeat(40 + seq) };
      break;
    case 'turn/end':
      data = { reason: 'done', usage: { input: 100 + seq, output: 20 + seq } };
      break;
    default:
      data = { text: `step ${seq} of ${key}`, unicode: 'é✓' };
  }
  return { seq, type, time, data };
}

/** The canonical text of an event, for byte-for-byte comparison whatever key order a backend returns. */
export function canonicalEvent(event: SessionEvent): string {
  return JSON.stringify({ seq: event.seq, type: event.type, time: event.time, data: event.data });
}

let clockHolds = 0;
let realNow = Date.now;

/**
 * Runs `call` with `Date.now` reading `iso` throughout (the instant does not move). Core and the
 * backends stamp `updatedAt` from `Date.now`, and no store takes a clock as an option, so this is
 * how the workload makes two sessions change in one millisecond on any machine, and a list cursor
 * meet a tie of `updatedAt` it must break by id. Holds may overlap; the real clock is back once
 * the last one ended.
 */
export async function holdClock<T>(iso: string, call: () => Promise<T>): Promise<T> {
  const instant = Date.parse(iso);
  if (clockHolds++ === 0) realNow = Date.now;
  Date.now = () => instant;
  try {
    return await call();
  } finally {
    if (--clockHolds === 0) Date.now = realNow;
  }
}
