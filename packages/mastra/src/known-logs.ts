// What this process knows of the logs it wrote, so that its next write to one of them can be
// planned without reading it first. Only a hint (contract §9, several hosts): another host may have
// appended, deleted or rewritten the log meanwhile. A write planned on it names the log's last event
// it knows (`append(…, { after })`), so a store that checks `after` lands it only on that very log
// and refuses it otherwise; see `commit` in session-log.ts.
import type { SessionEvent, SessionStore } from '@tidemark/core';

/** What this process knows of one session's log. */
export interface Known {
  /**
   * The log's last event, whole, as the store holds it: the closing event of a batch that links to
   * the one before it, so its data is the record as the log stands (thread, resource or run).
   */
  last: SessionEvent;
  /** A thread's messages folded from the whole log (thread-log.ts), when a call folded it. */
  messages?: ReadonlyMap<string, unknown>;
}

/** Sessions known per store, and messages held in all of them: the least recently used go first. */
const MAX_SESSIONS = 512;
const MAX_MESSAGES = 50_000;
/**
 * Characters of records (the last events' data, as JSON) held in all of them: a workflow run's
 * record is its whole snapshot, which can be megabytes, so a count alone does not bound the memory.
 * A record larger than a quarter of this is not kept (its next write reads it, as before).
 */
const MAX_RECORD_CHARS = 32 * 1024 * 1024;

/** The known logs of one store, bounded. */
export class KnownLogs {
  readonly #logs = new Map<string, Known>();
  readonly #chars = new Map<string, number>();
  #messages = 0;
  #recordChars = 0;

  /** What is known of session `id` (and it becomes the most recently used). */
  get(id: string): Known | undefined {
    const known = this.#logs.get(id);
    if (known !== undefined) {
      this.#logs.delete(id);
      this.#logs.set(id, known);
    }
    return known;
  }

  /** Keeps `known` for session `id`, in place of anything known before. */
  set(id: string, known: Known): void {
    this.forget(id);
    const chars = JSON.stringify(known.last.data).length;
    if (chars > MAX_RECORD_CHARS / 4) return;
    this.#logs.set(id, known);
    this.#chars.set(id, chars);
    this.#messages += known.messages?.size ?? 0;
    this.#recordChars += chars;
    for (const oldest of this.#logs.keys()) {
      if (
        this.#logs.size <= MAX_SESSIONS &&
        this.#messages <= MAX_MESSAGES &&
        this.#recordChars <= MAX_RECORD_CHARS
      )
        break;
      if (oldest !== id) this.forget(oldest); // the log just kept stays, however large
    }
  }

  /** Forgets session `id` (deleted, or a write whose outcome is not known). */
  forget(id: string): void {
    const known = this.#logs.get(id);
    if (known === undefined) return;
    this.#logs.delete(id);
    this.#messages -= known.messages?.size ?? 0;
    this.#recordChars -= this.#chars.get(id) ?? 0;
    this.#chars.delete(id);
  }
}

const stores = new WeakMap<SessionStore, KnownLogs>();

/** The known logs of `store`, shared by every storage object of this process over it. */
export function knownLogs(store: SessionStore): KnownLogs {
  let logs = stores.get(store);
  if (logs === undefined) {
    logs = new KnownLogs();
    stores.set(store, logs);
  }
  return logs;
}
