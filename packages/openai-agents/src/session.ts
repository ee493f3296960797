import {
  type AgentInputItem,
  applySessionHistoryMutations,
  type SessionHistoryRewriteArgs,
  type SessionHistoryRewriteAwareSession,
  type SessionHistoryTransactionArgs,
  type SessionHistoryTransactionAwareSession,
} from '@openai/agents-core';
import {
  checksAppendAfter,
  generateId,
  isTidemarkError,
  type JsonValue,
  KeyedQueue,
  nowIso,
  type SessionEvent,
  type SessionStore,
  TidemarkError,
} from '@tidemark/core';
import { canonicalJson, decodeValue } from './encoding.js';
import {
  closeBatch,
  EVENT,
  emptyHistory,
  type FoldedHistory,
  foldHistory,
  type LogHead,
  nonceOf,
  type PlannedEvent,
} from './history.js';
import { tidemarkIdOf } from './session-id.js';
import { type LogTail, readTail } from './tail.js';
import { type CheckedTransactionArgs, checkItems, checkTransactionArgs } from './transaction.js';

/** Options of {@link TidemarkSession}. */
export interface TidemarkSessionOptions {
  /** Any tidemark store: memory, JSONL, SQLite, PostgreSQL. */
  store: SessionStore;
  /**
   * The OpenAI Agents session id. Any non-empty string; it is mapped injectively to a tidemark id
   * (letters, digits and `-` stay as they are). A new time-ordered id when omitted.
   */
  sessionId?: string;
  /** Working directory recorded in the session's header when it is first written. */
  cwd?: string;
  /** How often an operation is replanned when another writer appended first (default 8). */
  maxConflictRetries?: number;
}

/**
 * What an operation decided: the events to append before the closing one (none: nothing to
 * write), the item count after them, and its result.
 */
interface Plan<T> {
  op: string;
  events: PlannedEvent[];
  count: number;
  result: T;
}

const nothing = <T>(result: T): Plan<T> => ({ op: '', events: [], count: 0, result });

/** One queue per store object, so that sessions over the same store serialize their writes. */
const queues = new WeakMap<SessionStore, KeyedQueue>();

function queueOf(store: SessionStore): KeyedQueue {
  let queue = queues.get(store);
  if (queue === undefined) {
    queue = new KeyedQueue();
    queues.set(store, queue);
  }
  return queue;
}

function decodeItems(items: readonly JsonValue[]): AgentInputItem[] {
  return items.map((item) => decodeValue(item) as AgentInputItem);
}

const itemEvents = (items: readonly JsonValue[]): PlannedEvent[] =>
  items.map((item) => ({ type: EVENT.item, data: item }));

/**
 * An OpenAI Agents JS `Session` kept in a tidemark store, with the SDK's history-transaction and
 * history-rewrite capabilities. One session is one tidemark session; every operation is one
 * appended batch that the next read folds, so a crash never applies an operation half-way, and a
 * transaction's operation id is stored with its change, so a retry never applies it twice.
 *
 * Several processes may share one store, each with its own objects: this object keeps nothing
 * between calls, so each call sees every other host's append, pop, clear and rewrite. `getItems`
 * with a limit, `addItems` and `popItem` read only the end of the log (every batch's closing event
 * holds the item count); transactions and rewrites fold it. Every write is planned on what the same
 * call read, and appended after the last event that read found: a store that checks
 * `append(…, { after })` refuses the batch when its log no longer ends there; on one that does not,
 * the append's seq check and one read after it confirm the batch follows the one it was planned
 * after (a log deleted and rewritten to the same length passes the seq check). A writer that lost
 * a race plans again, up to `maxConflictRetries` times.
 *
 * Every failure is a `TidemarkError`: INVALID for bad input (naming the field, never showing item
 * content), CONFLICT for a transaction whose precondition fails or when other writers won more
 * than `maxConflictRetries` races in a row (retryable; nothing of the refused call is stored), and
 * the store's own errors (IO, CORRUPT, CLOSED) for storage faults, which reach the runner as
 * errors, never as an empty history.
 */
export class TidemarkSession
  implements SessionHistoryTransactionAwareSession, SessionHistoryRewriteAwareSession
{
  readonly #store: SessionStore;
  readonly #sessionId: string;
  /** The tidemark session id this session is stored under. */
  readonly tidemarkId: string;
  readonly #cwd: string | undefined;
  readonly #maxConflictRetries: number;

  constructor(options: TidemarkSessionOptions) {
    if (options === null || typeof options !== 'object' || options.store === undefined) {
      throw new TidemarkError('INVALID', 'TidemarkSession: options.store is required');
    }
    this.#store = options.store;
    this.#sessionId = options.sessionId ?? generateId();
    this.tidemarkId = tidemarkIdOf(this.#sessionId);
    this.#cwd = options.cwd;
    const retries = options.maxConflictRetries ?? 8;
    if (!Number.isInteger(retries) || retries < 0) {
      throw new TidemarkError(
        'INVALID',
        'TidemarkSession: maxConflictRetries must be a non-negative integer',
      );
    }
    this.#maxConflictRetries = retries;
  }

  /** The OpenAI Agents session id. */
  async getSessionId(): Promise<string> {
    return this.#sessionId;
  }

  /**
   * The history in order; with `limit`, its last `limit` items, read from the end of the log
   * without folding the rest. Fresh objects on every call.
   * @throws TidemarkError INVALID for a limit that is not an integer.
   */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && !Number.isInteger(limit)) {
      throw new TidemarkError('INVALID', 'getItems: limit must be an integer');
    }
    if (limit === undefined) return decodeItems((await this.#fold()).items);
    if (limit <= 0) return [];
    return decodeItems((await this.#tail(limit)).items);
  }

  /** Appends items as one batch; the caller's objects are copied, later changes to them do nothing. */
  async addItems(items: AgentInputItem[]): Promise<void> {
    const encoded = checkItems(items, 'addItems: items', false);
    if (encoded.length === 0) return;
    await this.#commit(
      () => this.#tail(0),
      (head) => ({
        op: 'add',
        events: itemEvents(encoded),
        count: head.count + encoded.length,
        result: undefined,
      }),
    );
  }

  /** Removes and returns the last item; `undefined` when the history is empty. */
  async popItem(): Promise<AgentInputItem | undefined> {
    return this.#commit(
      () => this.#tail(1),
      (tail) => {
        const last = tail.items.at(-1);
        if (last === undefined) return nothing(undefined);
        return {
          op: 'pop',
          events: [{ type: EVENT.truncate, data: { count: 1 } }],
          count: tail.count - 1,
          result: decodeValue(last) as AgentInputItem,
        };
      },
    );
  }

  /**
   * Deletes the session's log: its items and its recorded operation ids. A storage fault rejects
   * (the history is not reported empty while it is still stored).
   */
  async clearSession(): Promise<void> {
    await queueOf(this.#store).run(this.tidemarkId, async () => {
      try {
        await this.#store.delete(this.tidemarkId);
      } catch (error) {
        if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
      }
    });
  }

  /**
   * Rewrites stored items as the SDK's `applySessionHistoryMutations` does (one function call
   * replaced by its replacement, its duplicates dropped), as one batch.
   */
  async applyHistoryMutations(args: SessionHistoryRewriteArgs): Promise<void> {
    const mutations = (args as { mutations?: unknown } | null)?.mutations;
    if (!Array.isArray(mutations)) {
      throw new TidemarkError('INVALID', 'applyHistoryMutations: mutations must be an array');
    }
    if (mutations.length === 0) return;
    mutations.forEach((mutation: unknown, i) => {
      const m = mutation as { type?: unknown; callId?: unknown; replacement?: unknown } | null;
      if (m?.type !== 'replace_function_call' || typeof m.callId !== 'string') {
        throw new TidemarkError(
          'INVALID',
          `applyHistoryMutations: mutations[${i}] is not a replace_function_call`,
        );
      }
      checkItems([m.replacement], `applyHistoryMutations: mutations[${i}].replacement`, true);
    });
    await this.#commit(
      () => this.#fold(),
      (history) => {
        const next = applySessionHistoryMutations(decodeItems(history.items), structuredClone(mutations));
        const encoded = checkItems(next, 'applyHistoryMutations: result', false);
        const events = rewriteEvents(history.items, encoded);
        return events.length === 0
          ? nothing(undefined)
          : { op: 'rewrite', events, count: encoded.length, result: undefined };
      },
    );
  }

  /**
   * Applies an append or a suffix replacement atomically and idempotently: the operation id is
   * stored in the same batch as the change. The same id with the same transaction succeeds without
   * applying it again; with a different transaction, or a suffix that does not match, it rejects
   * with CONFLICT and records nothing. Bad arguments are INVALID before anything is read or stored.
   */
  async applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void> {
    const checked = checkTransactionArgs(args);
    await this.#commit(
      () => this.#fold(),
      (history) => transactionPlan(history, checked, this.#sessionId),
    );
  }

  /** The whole history, folded from the whole log. */
  async #fold(): Promise<FoldedHistory> {
    try {
      const loaded = await this.#store.load(this.tidemarkId);
      return foldHistory(loaded.events, this.tidemarkId);
    } catch (error) {
      if (isTidemarkError(error, 'NOT_FOUND')) return emptyHistory();
      throw error;
    }
  }

  /** The end of the log with its last `limit` items, from its last events (see `tail.ts`). */
  async #tail(limit: number): Promise<LogTail> {
    const tail = await readTail(this.#store, this.tidemarkId, limit);
    if (tail !== undefined) return tail;
    const history = await this.#fold(); // a log written before closing events held counts
    return { ...history, items: history.items.slice(Math.max(history.items.length - limit, 0)) };
  }

  /**
   * Reads, plans and appends one batch; plans again when another writer got the seq first or
   * replaced the log. A plan that writes nothing stands on the read of this very call.
   */
  async #commit<S extends LogHead, T>(read: () => Promise<S>, plan: (state: S) => Plan<T>): Promise<T> {
    return queueOf(this.#store).run(this.tidemarkId, async () => {
      for (let attempt = 0; ; attempt++) {
        const state = await read();
        const planned = plan(state);
        if (planned.events.length === 0) return planned.result;
        try {
          await this.#append(state, closeBatch(planned.op, planned.events, planned.count, state.lastNonce));
          return planned.result;
        } catch (error) {
          const raced = isTidemarkError(error, 'CONFLICT') || isTidemarkError(error, 'NOT_FOUND');
          if (!raced || attempt >= this.#maxConflictRetries) throw error;
        }
      }
    });
  }

  async #append(head: LogHead, planned: PlannedEvent[]): Promise<void> {
    if (head.nextSeq === 0) {
      try {
        await this.#store.create({ id: this.tidemarkId, ...(this.#cwd !== undefined && { cwd: this.#cwd }) });
      } catch (error) {
        // Reserved by an earlier attempt here, or written by another writer: the append decides.
        if (!isTidemarkError(error, 'ALREADY_EXISTS')) throw error;
      }
    }
    const time = nowIso();
    const events = planned.map((event, i) => ({
      seq: head.nextSeq + i,
      type: event.type,
      time,
      data: event.data,
    }));
    // On a store that checks it, the append itself refuses a batch whose log no longer ends with
    // the event this call read (another writer appended, or deleted and rewrote the session).
    const after = head.nextSeq > 0 && checksAppendAfter(this.#store) ? head.last : undefined;
    if (after !== undefined) {
      await this.#store.append(this.tidemarkId, events, { after });
      return;
    }
    await this.#store.append(this.tidemarkId, events);
    if (head.nextSeq > 0) await this.#confirmLink(head, planned.length);
  }

  /**
   * Confirms that the batch just appended follows the closing event it was planned after. The seq
   * check alone cannot tell a log that another host deleted and rewrote to the same length: there
   * the batch landed on a log it was not planned on, every reader skips it, and it is planned again.
   */
  async #confirmLink(head: LogHead, written: number): Promise<void> {
    const at = head.nextSeq - 1;
    let anchor: SessionEvent | undefined;
    try {
      // From the end of the log: the closing event before the batch, and the batch.
      for await (const event of this.#store.read(this.tidemarkId, { fromSeq: at, last: written + 1 })) {
        anchor ??= event;
      }
      // Another writer appended since: the anchor lies further back, so read exactly it.
      if (anchor !== undefined && anchor.seq !== at) {
        anchor = undefined;
        for await (const event of this.#store.read(this.tidemarkId, { fromSeq: at, toSeq: at }))
          anchor = event;
      }
    } catch (error) {
      if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
    }
    if (anchor === undefined || nonceOf(anchor) !== head.lastNonce) {
      throw new TidemarkError(
        'CONFLICT',
        `session ${this.tidemarkId}: the session was cleared and written again while this write was planned`,
        { sessionId: this.tidemarkId, retryable: true },
      );
    }
  }
}

/** The events that turn `before` into `after`: cut back to the common prefix, then append. */
function rewriteEvents(before: readonly JsonValue[], after: readonly JsonValue[]): PlannedEvent[] {
  let common = 0;
  while (
    common < before.length &&
    common < after.length &&
    canonicalJson(before[common]!) === canonicalJson(after[common]!)
  ) {
    common++;
  }
  if (common === before.length && common === after.length) return [];
  const cut = before.length - common;
  const truncate: PlannedEvent[] = cut > 0 ? [{ type: EVENT.truncate, data: { count: cut } }] : [];
  return [...truncate, ...itemEvents(after.slice(common))];
}

function transactionPlan(
  history: FoldedHistory,
  checked: CheckedTransactionArgs,
  sessionId: string,
): Plan<undefined> {
  const { operationId, transaction, digest } = checked;
  const recorded = history.operations.get(operationId);
  if (recorded !== undefined) {
    if (recorded === digest) return nothing(undefined);
    throw new TidemarkError(
      'CONFLICT',
      `applyHistoryTransaction: operation ${JSON.stringify(operationId)} was already applied with a different transaction`,
      { sessionId },
    );
  }
  const record: PlannedEvent = { type: EVENT.operation, data: { operationId, digest } };
  if (transaction.type === 'append_items') {
    const events = [record, ...itemEvents(transaction.items)];
    return { op: 'transaction', events, count: history.count + transaction.items.length, result: undefined };
  }
  const { expectedSuffix, replacement } = transaction;
  const start = history.items.length - expectedSuffix.length;
  const matches =
    start >= 0 &&
    expectedSuffix.every((item, i) => canonicalJson(item) === canonicalJson(history.items[start + i]!));
  if (!matches) {
    throw new TidemarkError(
      'CONFLICT',
      'applyHistoryTransaction: the history suffix no longer matches the transaction precondition',
      { sessionId },
    );
  }
  const truncate: PlannedEvent[] =
    expectedSuffix.length > 0 ? [{ type: EVENT.truncate, data: { count: expectedSuffix.length } }] : [];
  return {
    op: 'transaction',
    events: [record, ...truncate, ...itemEvents(replacement)],
    count: start + replacement.length,
    result: undefined,
  };
}
