// The saver's workload for the fault sweeps: a real StateGraph (a reducer channel, two parallel
// tasks, an interrupt answered with Command({ resume })) run through TidemarkSaver, a ledger of
// which checkpoints were acknowledged and which were in doubt, and the checks made after a fault:
// the latest checkpoint is the last acknowledged one or a later one in doubt, never older, never
// nothing; it holds the values it was put with; and the graph runs on from it to the end.

import { isDeepStrictEqual } from 'node:util';
import type { RunnableConfig } from '@langchain/core/runnables';
import { Annotation, Command, END, interrupt, START, StateGraph } from '@langchain/langgraph';
import type {
  BaseCheckpointSaver,
  ChannelVersions,
  Checkpoint,
  CheckpointMetadata,
  CheckpointTuple,
  PendingWrite,
} from '@langchain/langgraph-checkpoint';
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { TidemarkSaver } from '../src/index.js';

/** The one thread of the workload (a space and a slash: the encoded session-id form). */
export const THREAD = 'fault sweep/1';
const CONFIG = { configurable: { thread_id: THREAD } };
const ROOT_CONFIG = { configurable: { thread_id: THREAD, checkpoint_ns: '' } };
const NODES = new Set(['plan', 'a', 'b', 'finish']);

const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
  answer: Annotation<string>(),
});

/** plan → (a ‖ b) → ask (interrupt) → finish: four super-steps and an interrupt per run. */
export function buildGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode('plan', () => ({ log: ['plan'] }))
    .addNode('a', () => ({ log: ['a'] }))
    .addNode('b', () => ({ log: ['b'] }))
    .addNode('ask', () => {
      const answer = interrupt('continue?') as string;
      return { log: [`ask:${answer}`], answer };
    })
    .addNode('finish', () => ({ log: ['finish'] }))
    .addEdge(START, 'plan')
    .addEdge('plan', 'a')
    .addEdge('plan', 'b')
    .addEdge(['a', 'b'], 'ask')
    .addEdge('ask', 'finish')
    .addEdge('finish', END)
    .compile({ checkpointer });
}

/** What the ledger knew at one instant. */
export interface LedgerSnapshot {
  /** The newest checkpoint whose put resolved. */
  lastAcked: string | undefined;
  /** Checkpoints whose put started and did not resolve (rejected or still running). */
  inDoubt: ReadonlySet<string>;
}

/** Which puts were acknowledged, which are in doubt, and the values each was put with. */
export class PutLedger {
  private readonly values = new Map<string, unknown>();
  private readonly acked = new Set<string>();
  private lastAcked: string | undefined;
  private readonly pending = new Set<Promise<unknown>>();
  /** Puts that resolved and puts that rejected. */
  ackedPuts = 0;
  failedPuts = 0;

  started(checkpoint: Checkpoint): void {
    this.values.set(checkpoint.id, versionedValues(checkpoint));
  }

  resolved(id: string): void {
    this.acked.add(id);
    this.ackedPuts++;
    if (this.lastAcked === undefined || id > this.lastAcked) this.lastAcked = id;
  }

  track<T>(promise: Promise<T>): Promise<T> {
    this.pending.add(promise);
    const forget = () => this.pending.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  /** Waits until no saver call of the run is still running (LangGraph rejects before they settle). */
  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  snapshot(): LedgerSnapshot {
    const inDoubt = new Set([...this.values.keys()].filter((id) => !this.acked.has(id)));
    return { lastAcked: this.lastAcked, inDoubt };
  }

  /** The channel values the checkpoint was put with (JSON-comparable). */
  valuesOf(id: string): unknown {
    return this.values.get(id);
  }
}

/**
 * The values of the channels the checkpoint versions (LangGraph also hands a put the empty
 * defaults of channels never written, which no saver stores), JSON-comparable.
 */
function versionedValues(checkpoint: Checkpoint): unknown {
  const versioned = Object.keys(checkpoint.channel_versions).filter(
    (ch) => checkpoint.channel_values[ch] !== undefined,
  );
  return JSON.parse(
    JSON.stringify(Object.fromEntries(versioned.map((ch) => [ch, checkpoint.channel_values[ch]]))),
  );
}

/** TidemarkSaver reporting every put and write to a ledger. */
export class RecordingSaver extends TidemarkSaver {
  constructor(
    store: SessionStore,
    private readonly ledger: PutLedger,
  ) {
    super(store);
  }

  override put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    this.ledger.started(checkpoint);
    const put = super.put(config, checkpoint, metadata, newVersions).then(
      (result) => {
        this.ledger.resolved(checkpoint.id);
        return result;
      },
      (error: unknown) => {
        this.ledger.failedPuts++;
        throw error;
      },
    );
    return this.ledger.track(put);
  }

  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string) {
    return this.ledger.track(super.putWrites(config, writes, taskId, taskPath));
  }
}

/** Whether `error` is, or wraps (cause chain, AggregateError), a TidemarkError. */
export function carriesTidemarkError(error: unknown, depth = 0): boolean {
  if (isTidemarkError(error)) return true;
  if (depth > 5 || typeof error !== 'object' || error === null) return false;
  const { cause, errors } = error as { cause?: unknown; errors?: unknown };
  if (Array.isArray(errors) && errors.some((e) => carriesTidemarkError(e, depth + 1))) return true;
  return cause !== undefined && carriesTidemarkError(cause, depth + 1);
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message.slice(0, 160)}` : String(error);
}

/** Three invocations: run to the interrupt, resume to the end, a second input to the interrupt. */
const INVOCATIONS: Parameters<ReturnType<typeof buildGraph>['invoke']>[0][] = [
  { log: ['input'] },
  new Command({ resume: 'yes' }),
  { log: ['again'] },
];

/** What one workload run under a fault gave the graph. */
export interface WorkloadOutcome {
  saver: RecordingSaver;
  /** The invocation's rejection, when one rejected (the workload stops there, as an app would). */
  rejected?: unknown;
  violations: string[];
}

/** Runs the workload on `store`; a rejection must carry a TidemarkError. */
export async function runGraphWorkload(store: SessionStore, ledger: PutLedger): Promise<WorkloadOutcome> {
  const saver = new RecordingSaver(store, ledger);
  const graph = buildGraph(saver);
  const violations: string[] = [];
  try {
    for (const input of INVOCATIONS) await graph.invoke(input, CONFIG);
    return { saver, violations };
  } catch (rejected) {
    if (!carriesTidemarkError(rejected))
      violations.push(`the graph rejected without a TidemarkError: ${describe(rejected)}`);
    return { saver, rejected, violations };
  } finally {
    await ledger.settle();
  }
}

/**
 * Checks what `saver` presents as the thread's latest checkpoint against the ledger. With
 * `mayReject`, a typed rejection is an acceptable answer (the live store right after a fault).
 */
export async function checkLatest(
  saver: BaseCheckpointSaver,
  ledger: PutLedger,
  snapshot: LedgerSnapshot,
  where: string,
  mayReject: boolean,
): Promise<string[]> {
  let tuple: Awaited<ReturnType<BaseCheckpointSaver['getTuple']>>;
  try {
    tuple = await saver.getTuple(CONFIG);
  } catch (error) {
    if (mayReject && carriesTidemarkError(error)) return [];
    return [`${where}: getTuple rejected: ${describe(error)}`];
  }
  const { lastAcked, inDoubt } = snapshot;
  if (tuple === undefined) {
    return lastAcked === undefined ? [] : [`${where}: no checkpoint, though ${lastAcked} was acknowledged`];
  }
  const id = tuple.checkpoint.id;
  const laterInDoubt = inDoubt.has(id) && (lastAcked === undefined || id > lastAcked);
  if (id !== lastAcked && !laterInDoubt) {
    const what = lastAcked !== undefined && id < lastAcked ? 'an older checkpoint' : 'a checkpoint never put';
    return [`${where}: latest is ${what} (${id}; last acknowledged ${lastAcked ?? 'none'})`];
  }
  const actual = versionedValues(tuple.checkpoint);
  if (!isDeepStrictEqual(actual, ledger.valuesOf(id)))
    return [`${where}: checkpoint ${id} holds other channel values than it was put with`];
  return [];
}

/**
 * A new saver's latest checkpoint (read through the pointers of the last batch, without folding)
 * is the one a fold of the whole log gives, with the same values and pending writes; and a new
 * saver's `list` of the newest checkpoints (walked back by their pointers) is the fold's.
 */
export async function checkColdMatchesFold(store: SessionStore, where: string): Promise<string[]> {
  try {
    const cold = await new TidemarkSaver(store).getTuple(CONFIG);
    const folding = new TidemarkSaver(store);
    const all: CheckpointTuple[] = [];
    // A list without a limit folds the thread.
    for await (const tuple of folding.list(ROOT_CONFIG)) all.push(tuple);
    const folded = all[0] === undefined ? undefined : await folding.getTuple(all[0].config);
    if (!isDeepStrictEqual(cold, folded))
      return [
        `${where}: the cold read gives ${cold?.checkpoint.id ?? 'none'}, a fold ${folded?.checkpoint.id ?? 'none'} (or other values)`,
      ];
    const coldList: CheckpointTuple[] = [];
    for await (const tuple of new TidemarkSaver(store).list(ROOT_CONFIG, { limit: COLD_LIST }))
      coldList.push(tuple);
    if (!isDeepStrictEqual(coldList, all.slice(0, COLD_LIST)))
      return [
        `${where}: a cold list of ${COLD_LIST} gives ${coldList.map((t) => t.checkpoint.id).join(', ')}, a fold ${all
          .slice(0, COLD_LIST)
          .map((t) => t.checkpoint.id)
          .join(', ')} (or other values)`,
      ];
    return [];
  } catch (error) {
    return [`${where}: a cold read or a fold rejected: ${describe(error)}`];
  }
}

/** Checkpoints a cold `list` reads in {@link checkColdMatchesFold}. */
const COLD_LIST = 4;

/** Runs the thread on from wherever it is (resume an interrupt, finish pending tasks) to its end. */
async function driveToEnd(graph: ReturnType<typeof buildGraph>): Promise<void> {
  for (let round = 0; round < 8; round++) {
    const state = await graph.getState(CONFIG);
    // Tasks whose writes are all stored are not in `next`, yet their step is unfinished: a new
    // input would discard it, so it is resumed (null input) like any other.
    if (state.next.length === 0 && state.tasks.length === 0) return;
    const interrupted = state.tasks.some((task) => task.interrupts.length > 0);
    await graph.invoke(interrupted ? new Command({ resume: 'later' }) : null, CONFIG);
  }
  throw new Error('the thread did not reach its end in 8 invocations');
}

/**
 * After the fault: the graph runs on from the thread's latest checkpoint to its end, takes one more
 * input and finishes it. Every input then went through each node exactly once (the reducer channel
 * neither lost nor repeated a task's writes).
 */
export async function continueGraph(store: SessionStore, where: string): Promise<string[]> {
  const graph = buildGraph(new TidemarkSaver(store));
  try {
    await driveToEnd(graph);
    await graph.invoke({ log: ['after'] }, CONFIG);
    await driveToEnd(graph);
    const { log } = (await graph.getState(CONFIG)).values as { log: string[] };
    const inputs = log.filter((entry) => !NODES.has(entry) && !entry.startsWith('ask:')).length;
    const counts = ['plan', 'a', 'b', 'finish'].map((node) => log.filter((e) => e === node).length);
    counts.push(log.filter((e) => e.startsWith('ask:')).length);
    if (log.at(-1) !== 'finish' || !log.includes('after') || counts.some((count) => count !== inputs))
      return [`${where}: the continued thread's log is inconsistent: ${JSON.stringify(log)}`];
    return [];
  } catch (error) {
    return [`${where}: the graph could not continue: ${describe(error)}`];
  }
}
