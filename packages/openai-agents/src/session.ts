import {
  type AgentInputItem,
  applySessionHistoryMutations,
  type SessionHistoryRewriteArgs,
  type SessionHistoryRewriteAwareSession,
  type SessionHistoryTransactionArgs,
  type SessionHistoryTransactionAwareSession,
} from '@openai/agents-core';
import {
  generateId,
  isTidemarkError,
  type JsonValue,
  KeyedQueue,
  nowIso,
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
  type PlannedEvent,
} from './history.js';
import { tidemarkIdOf } from './session-id.js';
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

/** What an operation decided: the events to append (none: nothing to write) and its result. */
interface Plan<T> {
  events: PlannedEvent[];
  result: T;
}

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
 * Every failure is a `TidemarkError`: INVALID for bad input (naming the field, never showing item
 * content), CONFLICT for a transaction whose precondition fails, and the store's own errors (IO,
 * CORRUPT, CLOSED) for storage faults, which reach the runner as errors, never as an empty history.
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
   * The history in order; with `limit`, its last `limit` items. Fresh objects on every call.
   * @throws TidemarkError INVALID for a limit that is not an integer.
   */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && !Number.isInteger(limit)) {
      throw new TidemarkError('INVALID', 'getItems: limit must be an integer');
    }
    const { items } = await this.#read();
    if (limit === undefined) return decodeItems(items);
    return limit <= 0 ? [] : decodeItems(items.slice(Math.max(items.length - limit, 0)));
  }

  /** Appends items as one batch; the caller's objects are copied, later changes to them do nothing. */
  async addItems(items: AgentInputItem[]): Promise<void> {
    const encoded = checkItems(items, 'addItems: items', false);
    if (encoded.length === 0) return;
    await this.#commit(() => ({ events: closeBatch('add', itemEvents(encoded)), result: undefined }));
  }

  /** Removes and returns the last item; `undefined` when the history is empty. */
  async popItem(): Promise<AgentInputItem | undefined> {
    return this.#commit((history) => {
      const last = history.items.at(-1);
      if (last === undefined) return { events: [], result: undefined };
      const events = closeBatch('pop', [{ type: EVENT.truncate, data: { count: 1 } }]);
      return { events, result: decodeValue(last) as AgentInputItem };
    });
  }

  /** Deletes the session's log: its items and its recorded operation ids. */
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
    await this.#commit((history) => {
      const next = applySessionHistoryMutations(decodeItems(history.items), structuredClone(mutations));
      const encoded = checkItems(next, 'applyHistoryMutations: result', false);
      return { events: rewriteEvents(history.items, encoded), result: undefined };
    });
  }

  /**
   * Applies an append or a suffix replacement atomically and idempotently: the operation id is
   * stored in the same batch as the change. The same id with the same transaction succeeds without
   * applying it again; with a different transaction, or a suffix that does not match, it rejects
   * with CONFLICT and records nothing. Bad arguments are INVALID before anything is read or stored.
   */
  async applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void> {
    const checked = checkTransactionArgs(args);
    await this.#commit((history) => ({
      events: transactionEvents(history, checked, this.#sessionId),
      result: undefined,
    }));
  }

  async #read(): Promise<FoldedHistory> {
    try {
      const loaded = await this.#store.load(this.tidemarkId);
      return foldHistory(loaded.events, this.tidemarkId);
    } catch (error) {
      if (isTidemarkError(error, 'NOT_FOUND')) return emptyHistory();
      throw error;
    }
  }

  /** Reads, plans and appends one batch; replans when another writer got the seq first. */
  async #commit<T>(plan: (history: FoldedHistory) => Plan<T>): Promise<T> {
    return queueOf(this.#store).run(this.tidemarkId, async () => {
      for (let attempt = 0; ; attempt++) {
        const history = await this.#read();
        const { events, result } = plan(history);
        if (events.length === 0) return result;
        try {
          await this.#append(history.nextSeq, events);
          return result;
        } catch (error) {
          const raced = isTidemarkError(error, 'CONFLICT') || isTidemarkError(error, 'NOT_FOUND');
          if (!raced || attempt >= this.#maxConflictRetries) throw error;
        }
      }
    });
  }

  async #append(nextSeq: number, planned: PlannedEvent[]): Promise<void> {
    if (nextSeq === 0) {
      try {
        await this.#store.create({ id: this.tidemarkId, ...(this.#cwd !== undefined && { cwd: this.#cwd }) });
      } catch (error) {
        // Reserved by an earlier attempt here, or written by another writer: the append decides.
        if (!isTidemarkError(error, 'ALREADY_EXISTS')) throw error;
      }
    }
    const time = nowIso();
    await this.#store.append(
      this.tidemarkId,
      planned.map((event, i) => ({ seq: nextSeq + i, type: event.type, time, data: event.data })),
    );
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
  return closeBatch('rewrite', [...truncate, ...itemEvents(after.slice(common))]);
}

function transactionEvents(
  history: FoldedHistory,
  checked: CheckedTransactionArgs,
  sessionId: string,
): PlannedEvent[] {
  const { operationId, transaction, digest } = checked;
  const recorded = history.operations.get(operationId);
  if (recorded !== undefined) {
    if (recorded === digest) return [];
    throw new TidemarkError(
      'CONFLICT',
      `applyHistoryTransaction: operation ${JSON.stringify(operationId)} was already applied with a different transaction`,
      { sessionId },
    );
  }
  const record: PlannedEvent = { type: EVENT.operation, data: { operationId, digest } };
  if (transaction.type === 'append_items') {
    return closeBatch('transaction', [record, ...itemEvents(transaction.items)]);
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
  return closeBatch('transaction', [record, ...truncate, ...itemEvents(replacement)]);
}
