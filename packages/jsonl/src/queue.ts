// Per-session ordering within one store instance: every operation on a session runs after the
// earlier ones on it, so a writer's length and next seq never move under an operation.
import { isTidemarkError, toIoError } from '@tidemark/core';

/** One session's queue: the promise the next step waits for, and how many steps hold it. */
interface Queue {
  tail: Promise<void>;
  depth: number;
}

/** Serializes steps per session id. */
export class SessionQueue {
  private readonly queues = new Map<string, Queue>();

  /** Whether a step of session `id` is running or waiting. */
  busy(id: string): boolean {
    return (this.queues.get(id)?.depth ?? 0) > 0;
  }

  /** Runs `step` after every earlier step of session `id`; a fault that is no TidemarkError becomes IO. */
  async run<T>(id: string, step: () => Promise<T>): Promise<T> {
    let queue = this.queues.get(id);
    if (queue === undefined) {
      queue = { tail: Promise.resolve(), depth: 0 };
      this.queues.set(id, queue);
    }
    const previous = queue.tail;
    let done!: () => void;
    queue.tail = new Promise<void>((resolve) => {
      done = resolve;
    });
    queue.depth++;
    try {
      await previous;
      return await step();
    } catch (error) {
      throw isTidemarkError(error) ? error : toIoError(error, `operating on ${id}`, id);
    } finally {
      done();
      queue.depth--;
      if (queue.depth === 0 && this.queues.get(id) === queue) this.queues.delete(id);
    }
  }

  /** Waits until every queue is empty, including steps queued while waiting. */
  async drain(): Promise<void> {
    for (let queues = [...this.queues.values()]; queues.length > 0; queues = [...this.queues.values()]) {
      await Promise.all(queues.map((queue) => queue.tail));
    }
  }
}
