// Immediate server restarts under a writer loop, on a private cluster: `pg_ctl stop -m immediate`
// kills every backend without a checkpoint, and the next start replays the WAL. A writer appends
// all along, retrying each batch until it is acknowledged; after every restart each acknowledged
// batch must load back byte for byte, nothing else may be there, and the store must write again.
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { Checker, canonicalEvent, workloadEvent } from '@tidemark/faults';
import type { PgEnv } from './pg-env.js';
import { type PrivateCluster, startPrivateCluster } from './private-cluster.js';

const SESSIONS = ['r0', 'r1', 'r2'];
const TYPES = ['user/message', 'tool/call', 'tool/result', 'turn/end'];
/** How long the writer keeps retrying one batch (a restart takes seconds on a busy machine). */
const RETRY_FOR_MS = 120_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The writer: appends batches of 1–4 events round-robin, each retried until acknowledged. */
class WriterLoop {
  readonly acked = new Map<string, string[]>(SESSIONS.map((key) => [key, []]));
  batches = 0;
  errors = 0;
  private stopped = false;
  finished = false;
  private paused: Promise<void> | undefined;
  private resume: (() => void) | undefined;
  private idle: (() => void) | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly store: SessionStore,
    private readonly check: () => Checker,
  ) {}

  start(): void {
    this.running = this.loop();
  }

  private async loop(): Promise<void> {
    for (let n = 0; !this.stopped; n++) {
      if (this.paused !== undefined) {
        this.idle?.();
        await this.paused;
        continue;
      }
      const key = SESSIONS[n % SESSIONS.length]!;
      await this.appendUntilAcked(key, 1 + (n % TYPES.length));
    }
    this.finished = true;
    this.idle?.();
  }

  private async appendUntilAcked(key: string, count: number): Promise<void> {
    const acked = this.acked.get(key)!;
    const events = TYPES.slice(0, count).map((type, i) => workloadEvent(key, acked.length + i, type));
    const id = `sess-${key}`;
    const until = Date.now() + RETRY_FOR_MS;
    for (;;) {
      try {
        if (acked.length === 0 && !(await this.store.has(id)))
          await this.store.create({ id, cwd: '/restart' });
        await this.store.append(id, events);
        acked.push(...events.map(canonicalEvent));
        this.batches++;
        return;
      } catch (error) {
        this.errors++;
        if (isTidemarkError(error)) this.check().outcome.errorsSurfaced++;
        if (!isTidemarkError(error)) {
          this.check().violation('untyped-error', `append(${id}) rejected untyped: ${String(error)}`);
        } else if (error.code === 'NOT_FOUND' && acked.length > 0) {
          this.check().violation(
            'false-absence',
            `append(${id}) said NOT_FOUND with ${acked.length} events acknowledged`,
          );
        } else if (error.code === 'CONFLICT') {
          // Only this writer writes: a conflict means the stored batch differs from the one retried.
          this.check().violation(
            'outcome-unresolved',
            `retrying append(${id}) gave CONFLICT: ${error.message}`,
          );
          this.stopped = true;
          return;
        }
        if (Date.now() > until || this.stopped) {
          this.check().violation(
            'not-writable',
            `append(${id}) failed for ${RETRY_FOR_MS} ms: ${String(error)}`,
          );
          this.stopped = true;
          return;
        }
        await sleep(100);
      }
    }
  }

  /** Resolves once the writer sits between batches; it then waits until {@link WriterLoop.go}. */
  async pause(): Promise<void> {
    if (this.finished) return;
    this.paused = new Promise((resolve) => {
      this.resume = resolve;
    });
    await new Promise<void>((resolve) => {
      this.idle = resolve;
      if (this.finished) resolve();
    });
  }

  go(): void {
    const resume = this.resume;
    this.paused = undefined;
    this.idle = undefined;
    resume?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.go();
    await this.running;
  }
}

/** Loads every session and checks that exactly the acknowledged events are there. */
async function verifyAcked(
  store: SessionStore,
  writer: WriterLoop,
  check: Checker,
  after: string,
): Promise<void> {
  for (const [key, acked] of writer.acked) {
    if (acked.length === 0) continue;
    const id = `sess-${key}`;
    const loaded = await check.attempt(`load(${id}) ${after}`, () => store.load(id));
    if (!loaded.ok) {
      check.outcome.lostEvents += acked.length;
      check.violation(
        loaded.error?.code === 'NOT_FOUND' ? 'false-absence' : 'lost-event',
        `load(${id}) ${after}: ${loaded.error?.code ?? 'untyped'} ${loaded.error?.message ?? ''}`,
      );
      continue;
    }
    const events = loaded.value.events.map(canonicalEvent);
    let good = 0;
    while (good < acked.length && events[good] === acked[good]) good++;
    if (good < acked.length) {
      check.outcome.lostEvents += acked.length - good;
      check.violation('lost-event', `${id}: ${acked.length - good} acknowledged event(s) missing ${after}`);
    }
    if (events.length > acked.length)
      check.violation(
        'unacknowledged-visible',
        `${id}: ${events.length - acked.length} event(s) beyond the acknowledged ones ${after}`,
      );
  }
}

async function waitForBatches(writer: WriterLoop, more: number, timeoutMs: number): Promise<boolean> {
  const target = writer.batches + more;
  const until = Date.now() + timeoutMs;
  while (writer.batches < target) {
    if (Date.now() > until || writer.finished) return false;
    await sleep(20);
  }
  return true;
}

/**
 * `restarts` immediate restarts of a private cluster while a writer appends; one report run per
 * restart. The writer must get batches acknowledged between restarts (the store reconnects).
 */
export async function restartCellPg(env: PgEnv, restarts: number): Promise<number> {
  const faultClass = 'pg: immediate restart under a writer';
  let cluster: PrivateCluster;
  try {
    cluster = await startPrivateCluster();
  } catch (error) {
    env.report.notApplicable(
      env.backend,
      faultClass,
      `no private cluster: ${(error as Error).message.split('\n')[0]}`,
    );
    return 0;
  }
  let check = new Checker();
  let runs = 0;
  try {
    const opened = await check.attempt('open', () =>
      env.open({
        connectionString: cluster.connectionString,
        schema: 'tidemark',
        onWarning: () => undefined,
      }),
    );
    if (!opened.ok) {
      env.report.add(env.backend, faultClass, 'open', check.outcome, false);
      return 1;
    }
    const store = opened.value;
    const writer = new WriterLoop(store, () => check);
    writer.start();
    for (let r = 1; r <= restarts && !env.report.enough; r++) {
      if (!(await waitForBatches(writer, 3, 60_000)))
        check.violation('not-writable', `no batch acknowledged in 60 s before restart ${r}`);
      await cluster.restart({ mode: 'immediate' });
      if (!(await waitForBatches(writer, 1, 90_000)))
        check.violation('not-writable', `the writer got nothing acknowledged within 90 s after restart ${r}`);
      await writer.pause();
      await verifyAcked(store, writer, check, `after restart ${r}`);
      writer.go();
      const acked = [...writer.acked.values()].reduce((n, events) => n + events.length, 0);
      env.report.add(
        env.backend,
        faultClass,
        `restart ${r} (${acked} events acknowledged)`,
        check.outcome,
        true,
      );
      runs++;
      env.progress?.(`${env.backend} immediate restarts`, r, restarts);
      check = new Checker();
    }
    await writer.stop();
    await check.attempt('close', () => store.close());
    // Finally a fresh store sees the same: every acknowledged event, nothing more.
    const reopened = await check.attempt('reopen', () =>
      env.open({
        connectionString: cluster.connectionString,
        schema: 'tidemark',
        onWarning: () => undefined,
      }),
    );
    if (reopened.ok) {
      await verifyAcked(reopened.value, writer, check, 'after reopening');
      await check.attempt('close', () => reopened.value.close());
    }
    env.report.add(env.backend, faultClass, `reopen after ${restarts} restarts`, check.outcome, false);
    return runs + 1;
  } finally {
    await cluster.stop();
  }
}
