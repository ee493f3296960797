// Test doubles around a real store: they fail, lose answers or hold appends, to drive the writer
// through the faults of contract §8. The reference backend is imported by relative path because core
// cannot depend on @tidemark/memory (which depends on core).

import { openMemoryStore } from '../../memory/src/index.js';
import type { AppendResult, SessionEvent, SessionStore } from '../src/index.js';

export { openMemoryStore };

/** A store whose appends can be made to fail before or after committing, or to wait for a gate. */
export interface FaultyStore extends SessionStore {
  /** Number of append calls seen. */
  readonly appendCalls: number;
  /** Sizes of the batches passed to append, in call order. */
  readonly batchSizes: number[];
  /** Fail the append calls whose 1-based numbers are in this set, before anything is written. */
  failBefore: Set<number>;
  /** Let the append calls in this set commit, then throw as if the answer was lost. */
  failAfter: Set<number>;
  /** When set, every append waits for this promise before reaching the inner store. */
  gate: Promise<void> | undefined;
}

function ioFault(n: number): Error {
  return Object.assign(new Error(`injected EIO on append #${n}`), { code: 'EIO' });
}

/** Wraps `inner` as a {@link FaultyStore}. Injected faults are untyped errno errors on purpose. */
export function faulty(inner: SessionStore): FaultyStore {
  let calls = 0;
  const wrapper: FaultyStore = {
    get appendCalls() {
      return calls;
    },
    batchSizes: [],
    failBefore: new Set(),
    failAfter: new Set(),
    gate: undefined,
    create: (init) => inner.create(init),
    async append(id: string, events: readonly SessionEvent[]): Promise<AppendResult> {
      const n = ++calls;
      wrapper.batchSizes.push(events.length);
      if (wrapper.gate !== undefined) await wrapper.gate;
      if (wrapper.failBefore.has(n)) throw ioFault(n);
      const result = await inner.append(id, events);
      if (wrapper.failAfter.has(n)) throw ioFault(n);
      return result;
    },
    load: (id, options) => inner.load(id, options),
    read: (id, range) => inner.read(id, range),
    list: (query) => inner.list(query),
    has: (id) => inner.has(id),
    update: (id, patch) => inner.update(id, patch),
    delete: (id, options) => inner.delete(id, options),
    close: () => inner.close(),
  };
  return wrapper;
}

/** A promise with its resolve function exposed. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
