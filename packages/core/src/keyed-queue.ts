// Per-key serialization inside one store instance: the operations on one session run one after
// another, operations on different sessions run concurrently.

/** Serializes async work per key within one instance. */
export class KeyedQueue {
  private readonly tails = new Map<string, { tail: Promise<void>; depth: number }>();

  /**
   * Runs `fn` once every earlier call with the same key has settled, and settles as it does. A
   * failing call does not stop the ones queued after it.
   */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const entry = this.tails.get(key) ?? { tail: Promise.resolve(), depth: 0 };
    const result = entry.tail.then(fn);
    entry.depth += 1;
    entry.tail = result.then(
      () => this.settled(key, entry),
      () => this.settled(key, entry),
    );
    this.tails.set(key, entry);
    return result;
  }

  /** True while work for `key` is queued or running. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  /**
   * Resolves once every queue is empty, including work queued while draining. It never rejects:
   * the failures belong to the callers of {@link KeyedQueue.run}.
   */
  async drain(): Promise<void> {
    while (this.tails.size > 0) {
      await Promise.all([...this.tails.values()].map((entry) => entry.tail));
    }
  }

  private settled(key: string, entry: { depth: number }): void {
    entry.depth -= 1;
    if (entry.depth === 0 && this.tails.get(key) === entry) this.tails.delete(key);
  }
}
