// The write path of contract §8 under the harness: SessionWriter push/flush/close/abandon, resume()
// and fork() over the store under test, inside the same error and crash sweeps as the plain
// workload. The model learns what the store acknowledged from an observing proxy between the
// writer and the store (as runner.ts learns it from its own appends), so the writer's promises are
// checked against the store's answers: a flush or close that resolved must have every pushed event
// acknowledged, and abandon() must hand back exactly the accepted events the store did not take.
import {
  type CreateInit,
  type DeleteOptions,
  fork,
  resume,
  type SessionEvent,
  type SessionStore,
  SessionWriter,
  type SessionWriterOptions,
} from '@tidemark/core';
import type { WriterUnderTest, WriterWrapper } from '../drivers/driver.js';
import type { ModelSession, WorkloadModel } from '../verdicts/model.js';
import {
  type Checker,
  endsInBoundary,
  type WorkloadExtension,
  type WorkloadRunOptions,
  type WritePathStep,
} from './runner.js';
import { canonicalEvent, WORKLOAD_CWDS, type WorkloadStep, workloadEvent } from './workload.js';

/**
 * Writer settings of the write path: batches form by count (2) and explicit flushes only, never by
 * the timer, so that every run performs the same storage operations in the same order (the error
 * sweep numbers them); a buffer of 3 makes the fourth push of a turn wait for space (backpressure).
 */
export const WRITE_PATH_WRITER: Omit<SessionWriterOptions, 'nextSeq'> = {
  maxBatchEvents: 2,
  maxBufferedEvents: 3,
  maxDelayMs: 60 * 60 * 1000,
};

/**
 * The write-path workload: a turn through a writer (two batches, backpressure) flushed, a session
 * written and closed, a turn abandoned half-flushed, a resume that closes the interrupted turn and
 * writes on, a fork of the first turn written on, and the reads that check them. 2 sessions and a
 * fork child; every step's storage faults are swept like AGENT_WORKLOAD's.
 */
export const WRITE_PATH_WORKLOAD: readonly WorkloadStep[] = [
  { kind: 'create', key: 'a', init: { cwd: WORKLOAD_CWDS.a!, title: 'write path' } },
  { kind: 'write', key: 'a', types: ['user/message', 'tool/call', 'tool/result', 'turn/end'], end: 'flush' },
  { kind: 'create', key: 'b', init: { cwd: WORKLOAD_CWDS.b! } },
  { kind: 'write', key: 'b', types: ['user/message', 'assistant/message', 'turn/end'], end: 'close' },
  { kind: 'write', key: 'a', types: ['user/message', 'tool/call', 'tool/result'], end: 'abandon' },
  { kind: 'resume', key: 'a', closeTurn: true },
  { kind: 'write', key: 'a', types: ['user/message', 'turn/end'], end: 'close' },
  { kind: 'fork', key: 'a', child: 'f', atSeq: 3 },
  { kind: 'write', key: 'f', types: ['user/message', 'assistant/message', 'turn/end'], end: 'flush' },
  { kind: 'resume', key: 'b', closeTurn: false },
  { kind: 'load', key: 'f' },
  { kind: 'list', cwd: WORKLOAD_CWDS.a! },
];

/** The write path as a named workload of the sweeps (mode.ts): rows `write path: …`, replay ids `write-path/…`. */
export const WRITE_PATH = { name: 'write path', id: 'write-path', steps: WRITE_PATH_WORKLOAD } as const;

/** What resume's hook appends for an interrupted turn: an error result for each open call, then the end. */
function closeTurn(tail: readonly SessionEvent[]): { type: string; data: { [k: string]: string } }[] {
  const answered = new Set(
    tail.filter((e) => e.type === 'tool/result').map((e) => String((e.data as { callId?: unknown }).callId)),
  );
  return [
    ...tail
      .filter((e) => e.type === 'tool/call')
      .map((e) => String((e.data as { callId?: unknown }).callId))
      .filter((callId) => !answered.has(callId))
      .map((callId) => ({ type: 'tool/result', data: { callId, error: 'interrupted' } })),
    { type: 'turn/end', data: { reason: 'interrupted' } },
  ];
}

/** One open writer of the workload and the events it accepted (canonical text by seq). */
interface OpenWriter {
  writer: WriterUnderTest;
  accepted: Map<number, string>;
}

/**
 * Runs the write-path steps of one workload run (a {@link WorkloadExtension} of runner.ts): it
 * holds the writers between steps and keeps the model in step with what the store acknowledged.
 */
export class WritePathRun implements WorkloadExtension {
  private readonly writers = new Map<string, OpenWriter>();
  private proxy: { inner: SessionStore; store: SessionStore } | undefined;

  constructor(
    private readonly model: WorkloadModel,
    private readonly wrap: WriterWrapper = (writer) => writer,
  ) {}

  async runStep(
    store: SessionStore,
    step: WritePathStep,
    check: Checker,
    options: WorkloadRunOptions,
  ): Promise<void> {
    const observed = this.observe(store, check, options);
    switch (step.kind) {
      case 'write':
        return this.write(observed, step, check, options);
      case 'resume':
        return this.resume(observed, step, check);
      case 'fork':
        return this.fork(observed, step, check);
    }
  }

  async finish(check: Checker): Promise<void> {
    // A writer left open at the end is given up: what it still holds must come back whole.
    for (const key of [...this.writers.keys()]) await this.abandon(key, check);
  }

  private session(key: string, cwd?: string): ModelSession {
    return this.model.session(key, cwd ?? WORKLOAD_CWDS[key]);
  }

  /** The store as the writers see it: every answer to create, append and delete goes into the model. */
  private observe(inner: SessionStore, check: Checker, options: WorkloadRunOptions): SessionStore {
    if (this.proxy?.inner === inner) return this.proxy.store;
    const byId = (id: string) => [...this.model.sessions.values()].find((s) => s.id === id);
    const store: SessionStore = {
      create: async (init?: CreateInit) => {
        const meta = await inner.create(init);
        const session = init?.id === undefined ? undefined : byId(init.id);
        if (session !== undefined) {
          session.created = true;
          session.fieldStates = [
            {
              ...(init?.title !== undefined && { title: init.title }),
              ...(init?.tags !== undefined && { tags: [...init.tags] }),
            },
          ];
        }
        return meta;
      },
      append: async (id, events) => {
        const session = byId(id);
        if (session === undefined) return inner.append(id, events);
        const batch = events.map(canonicalEvent); // copied at call time, as the store copies it
        options.onInflight?.({ session, batch });
        try {
          const result = await inner.append(id, events);
          options.onInflight?.(undefined);
          ackObserved(session, events[0]?.seq ?? 0, batch, endsInBoundary(events), check);
          return result;
        } catch (error) {
          options.onInflight?.(undefined);
          const absent = (error as { code?: unknown }).code === 'NOT_FOUND' && !session.created;
          if (!absent && !session.inDoubt.some((b) => sameBatch(b, batch))) session.inDoubt.push(batch);
          throw error;
        }
      },
      delete: async (id: string, deleteOptions?: DeleteOptions) => {
        const session = byId(id);
        try {
          await inner.delete(id, deleteOptions);
        } catch (error) {
          // A failed delete (fork's cleanup) may have removed the log all the same.
          if (session !== undefined && (session.exists !== 'no' || session.created))
            session.deleted = 'maybe';
          throw error;
        }
        if (session !== undefined) {
          session.deleted = 'yes';
          session.created = false;
        }
      },
      load: (id, loadOptions) => inner.load(id, loadOptions),
      read: (id, range) => inner.read(id, range),
      list: (query) => inner.list(query),
      has: (id) => inner.has(id),
      update: (id, patch) => inner.update(id, patch),
      close: () => inner.close(),
    };
    this.proxy = { inner, store };
    return store;
  }

  /** Pushes a turn through the session's writer, then flushes, closes or abandons it. */
  private async write(
    store: SessionStore,
    step: Extract<WritePathStep, { kind: 'write' }>,
    check: Checker,
    options: WorkloadRunOptions,
  ): Promise<void> {
    const session = this.session(step.key);
    let open = this.writers.get(step.key);
    if (open === undefined) {
      // Only a new session starts at seq 0; an existing one is continued through resume or fork.
      if (session.exists !== 'no' || session.deleted !== 'no') return;
      open = {
        writer: this.wrap(new SessionWriter(store, session.id, WRITE_PATH_WRITER)),
        accepted: new Map(),
      };
      this.writers.set(step.key, open);
    }
    const { writer, accepted } = open;
    for (const type of step.types) {
      const seq = writer.nextSeq;
      const event = workloadEvent(session.key, seq, type);
      const pushed = await check.attempt(`push(${session.id}, seq ${seq})`, () =>
        writer.push({ type, data: event.data, time: event.time }),
      );
      // Rejected: the writer is in its failed state (a background append failed); the agent
      // stops pushing and flushes, which retries the failed batch.
      if (!pushed.ok) break;
      accepted.set(seq, canonicalEvent(event));
    }
    if (step.end === 'abandon') {
      await this.abandon(step.key, check);
      return;
    }
    const target = writer.nextSeq;
    const call = step.end === 'flush' ? () => writer.flush() : () => writer.close();
    for (let attempt = 0; attempt < 2; attempt++) {
      const settled = await check.attempt(`${step.end}(${session.id}) of seq < ${target}`, call);
      if (settled.ok) {
        this.checkAcknowledged(session, target, `${step.end}()`, check);
        if (step.end === 'close') this.writers.delete(step.key);
        return;
      }
      if (settled.error?.code === 'CLOSED') break;
      if (options.checkFailedAppend && attempt === 0) {
        // contract §4: the failed append left the log as it was. The fault is spent: look now,
        // then retry as an agent would (flush and close retry the very batch that failed).
        const loaded = await check.attempt(`load(${session.id}) after a failed ${step.end}`, () =>
          store.load(session.id),
        );
        check.load(session, loaded, false);
      }
    }
    // Still failing: give up on the writer; it must hand back everything the store did not take.
    await this.abandon(step.key, check);
  }

  /** flush() or close() resolved: the store must have acknowledged every event below `target`. */
  private checkAcknowledged(session: ModelSession, target: number, call: string, check: Checker): void {
    if (session.acked.length < target)
      check.violation(
        'flush-before-ack',
        `${call} of ${session.id} resolved with seq ${session.acked.length}..${target - 1} not acknowledged by the store`,
      );
  }

  /** abandon(): the events handed back must be exactly those accepted and not acknowledged. */
  private async abandon(key: string, check: Checker): Promise<void> {
    const open = this.writers.get(key);
    if (open === undefined) return;
    this.writers.delete(key);
    const session = this.session(key);
    const left = await check.attempt(`abandon(${session.id})`, () => open.writer.abandon());
    if (!left.ok) return;
    const expected = [...open.accepted]
      .filter(([seq]) => seq >= session.acked.length)
      .map(([, text]) => text);
    const given = left.value.map(canonicalEvent);
    if (given.length !== expected.length || given.some((text, i) => text !== expected[i])) {
      const dropped = expected.filter((text) => !given.includes(text)).length;
      check.outcome.lostEvents += dropped;
      check.violation(
        'pending-dropped',
        `abandon(${session.id}) handed back ${given.length} event(s), ${expected.length} were accepted and not acknowledged (${dropped} dropped)`,
      );
    }
  }

  /** resume(): the history is the log, and the writer continues at its stored next seq. */
  private async resume(
    store: SessionStore,
    step: Extract<WritePathStep, { kind: 'resume' }>,
    check: Checker,
  ): Promise<void> {
    const session = this.session(step.key);
    if (this.writers.has(step.key)) await this.abandon(step.key, check);
    if (session.deleted !== 'no') return;
    const resumed = await check.attempt(`resume(${session.id})`, () =>
      resume(store, session.id, {
        writer: WRITE_PATH_WRITER,
        ...(step.closeTurn && { closeInterruptedTurn: closeTurn }),
      }),
    );
    if (!resumed.ok) {
      // NOT_FOUND for an existing session is false absence, as from load.
      check.load(session, { ok: false, error: resumed.error }, true);
      return;
    }
    const { history, writer } = resumed.value;
    check.load(session, { ok: true, value: { events: history } }, true);
    if (writer.nextSeq !== history.length || history.length < session.acked.length) {
      check.violation(
        'seq-misplaced',
        `resume(${session.id}) returned a writer at seq ${writer.nextSeq}; the log holds ${history.length} event(s), ${session.acked.length} acknowledged`,
      );
      await writer.abandon();
      return;
    }
    this.writers.set(step.key, { writer: this.wrap(writer), accepted: new Map() });
  }

  /** fork(): the child holds the parent's events 0..atSeq, and its writer continues after them. */
  private async fork(
    store: SessionStore,
    step: Extract<WritePathStep, { kind: 'fork' }>,
    check: Checker,
  ): Promise<void> {
    const parent = this.session(step.key);
    // A parent shorter than the fork point (its turns failed under the fault) has nothing to fork.
    if (parent.exists !== 'yes' || parent.requiredEvents <= step.atSeq) return;
    const child = this.session(step.child, parent.cwd);
    const forked = await check.attempt(`fork(${parent.id} at ${step.atSeq})`, () =>
      fork(store, parent.id, step.atSeq, { id: child.id, writer: WRITE_PATH_WRITER }),
    );
    if (!forked.ok) {
      if (forked.error?.code === 'NOT_FOUND')
        check.violation('false-absence', `fork(${parent.id}) said NOT_FOUND for an existing session`);
      return;
    }
    const { history, writer, meta } = forked.value;
    const copied = history.map(canonicalEvent);
    const wanted = parent.acked.slice(0, step.atSeq + 1);
    const sameRange = copied.length === wanted.length && copied.every((text, i) => text === wanted[i]);
    if (!sameRange || meta.parent?.id !== parent.id || meta.parent.seq !== step.atSeq)
      check.violation(
        'seq-misplaced',
        `fork(${parent.id} at ${step.atSeq}) copied ${copied.length} event(s) (wanted the ${wanted.length} acknowledged ones) with parent ${JSON.stringify(meta.parent)}`,
      );
    if (writer.nextSeq !== step.atSeq + 1 || child.acked.length !== step.atSeq + 1) {
      check.violation(
        'seq-misplaced',
        `fork(${parent.id} at ${step.atSeq}) returned a writer at seq ${writer.nextSeq}; the child holds ${child.acked.length} acknowledged event(s)`,
      );
      await writer.abandon();
      return;
    }
    this.writers.set(step.child, { writer: this.wrap(writer), accepted: new Map() });
  }
}

function sameBatch(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((text, i) => text === b[i]);
}

/**
 * The store acknowledged `batch` at `seq`: it is in the model from now on. A batch past the
 * model's next seq proves an in-doubt batch before it landed (resume found it and wrote on); a
 * batch before it is an idempotent retry of events already acknowledged.
 */
function ackObserved(
  session: ModelSession,
  seq: number,
  batch: readonly string[],
  boundary: boolean,
  check: Checker,
): void {
  const gap = seq - session.acked.length;
  if (gap > 0) {
    const landed = session.inDoubt.find((b) => b.length === gap);
    if (landed === undefined) {
      check.violation(
        'seq-misplaced',
        `append(${session.id}) at seq ${seq} acknowledged, but only ${session.acked.length} event(s) are`,
      );
      return;
    }
    session.ack(landed, true);
  }
  const fresh = batch.slice(Math.max(0, -gap));
  if (fresh.length > 0) session.ack(fresh, boundary);
}
