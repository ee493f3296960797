// Which checkpoint ids this saver handed out as "the latest" of their namespace, and which the
// caller chose explicitly. A run that read the latest checkpoint and builds on it must still be
// building on the latest when its write lands (else another run got there first, and writing would
// fork the thread and hide that run's checkpoints); a checkpoint the caller named (time travel,
// `updateState` on an old config) forks as LangGraph defines. An id never handed out counts as
// chosen by the caller: this saver cannot tell it from a config the caller kept.

/** How a checkpoint id reached the caller. */
export type Handout = 'latest' | 'explicit';

/** The key standing for "no checkpoint": a latest read of an empty namespace. */
export const NO_CHECKPOINT = '';

/** Ids kept per namespace: a run only ever builds on the last few it was handed. */
const IDS_PER_NAMESPACE = 256;

interface ThreadHandouts {
  /** Per namespace, id (or {@link NO_CHECKPOINT}) to how it was handed out, oldest first. */
  byNs: Map<string, Map<string, Handout>>;
  /** Per namespace, the id of this saver's last acknowledged `put`. */
  lastPut: Map<string, string>;
}

/** The hand-outs of the most recently used threads. */
export class Handouts {
  private readonly threads = new Map<string, ThreadHandouts>();

  constructor(private readonly maxThreads: number) {}

  /** Records that `id` of `ns` reached the caller as `how` (the last hand-out of an id wins). */
  mark(sessionId: string, ns: string, id: string, how: Handout): void {
    const thread = this.thread(sessionId);
    let ids = thread.byNs.get(ns);
    if (ids === undefined) {
      ids = new Map();
      thread.byNs.set(ns, ids);
    }
    ids.delete(id);
    ids.set(id, how);
    while (ids.size > IDS_PER_NAMESPACE) ids.delete(ids.keys().next().value as string);
  }

  /** Records an acknowledged `put` of `id`: handed out as the latest, and no longer an empty namespace. */
  put(sessionId: string, ns: string, id: string): void {
    this.mark(sessionId, ns, id, 'latest');
    this.threads.get(sessionId)?.byNs.get(ns)?.delete(NO_CHECKPOINT);
    this.thread(sessionId).lastPut.set(ns, id);
  }

  /** True when `id` (or {@link NO_CHECKPOINT}) was last handed out as the latest of `ns`. */
  handedAsLatest(sessionId: string, ns: string, id: string): boolean {
    return this.threads.get(sessionId)?.byNs.get(ns)?.get(id) === 'latest';
  }

  /** The id of this saver's last acknowledged `put` in `ns`. */
  lastPut(sessionId: string, ns: string): string | undefined {
    return this.threads.get(sessionId)?.lastPut.get(ns);
  }

  /** Forgets a thread (deleted by this saver: what it handed out no longer exists). */
  forget(sessionId: string): void {
    this.threads.delete(sessionId);
  }

  private thread(sessionId: string): ThreadHandouts {
    let thread = this.threads.get(sessionId);
    if (thread === undefined) thread = { byNs: new Map(), lastPut: new Map() };
    else this.threads.delete(sessionId);
    this.threads.set(sessionId, thread);
    while (this.threads.size > this.maxThreads)
      this.threads.delete(this.threads.keys().next().value as string);
    return thread;
  }
}
