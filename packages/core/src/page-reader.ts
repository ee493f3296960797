import type { SessionEvent } from './event.js';

/**
 * The events of a stream of pages, one `next()` at a time: how `read()` hands out the events of
 * a backend that reads whole pages (`storageReadPages`). An async generator relaying a backend's
 * own generator costs several promises and microtask turns per event and layer (and more with
 * async hooks on, as LangGraph runs); here an event of a page in hand costs one resolved promise.
 * Behaves as the generator did: `start` (validation, the backend's stream) runs at the first
 * `next()`, `check` before each event handed out, and once either throws, or the pages end, every
 * later `next()` is done; calls made before the previous one settled are answered in order.
 */
export class PageReader implements AsyncIterator<SessionEvent> {
  private pages: AsyncIterator<readonly SessionEvent[]> | undefined;
  private page: readonly SessionEvent[] = [];
  private at = 0;
  private finished = false;
  /** The `next()` awaiting a page, which later calls wait for. */
  private pending: Promise<IteratorResult<SessionEvent>> | undefined;

  constructor(
    private readonly start: () => AsyncIterable<readonly SessionEvent[]>,
    private readonly check: () => void,
  ) {}

  next(): Promise<IteratorResult<SessionEvent>> {
    if (this.pending !== undefined) {
      const again = () => this.next();
      return this.pending.then(again, again);
    }
    if (this.finished) return Promise.resolve({ done: true, value: undefined });
    if (this.at < this.page.length) {
      try {
        this.check();
      } catch (error) {
        return this.fail(error);
      }
      return Promise.resolve({ done: false, value: this.page[this.at++]! });
    }
    const pending = this.nextPage();
    this.pending = pending;
    const clear = () => {
      if (this.pending === pending) this.pending = undefined;
    };
    pending.then(clear, clear);
    return pending;
  }

  async return(): Promise<IteratorResult<SessionEvent>> {
    if (!this.finished) {
      this.finished = true;
      await this.pages?.return?.();
    }
    return { done: true, value: undefined };
  }

  /** Reads pages until one has an event (or the stream ends), and hands out its first. */
  private async nextPage(): Promise<IteratorResult<SessionEvent>> {
    try {
      this.pages ??= this.start()[Symbol.asyncIterator]();
      for (;;) {
        const read = await this.pages.next();
        if (read.done) {
          this.finished = true;
          return { done: true, value: undefined };
        }
        this.page = read.value;
        this.at = 0;
        if (this.page.length > 0) {
          this.check();
          return { done: false, value: this.page[this.at++]! };
        }
      }
    } catch (error) {
      return this.fail(error);
    }
  }

  /** Ends the stream (the backend's too) and rejects with `error`, as a generator that threw. */
  private async fail(error: unknown): Promise<never> {
    const pages = this.pages;
    this.finished = true;
    this.page = [];
    try {
      await pages?.return?.();
    } catch {
      // The error that ended the stream says more.
    }
    throw error;
  }
}
