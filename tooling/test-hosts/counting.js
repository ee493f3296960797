// A store with its calls counted, for the adapters' tests of how many reads a write costs:
// reads, loads, appends (those naming `after`, and those refused with CONFLICT) and summary updates.
// With `capable`, it hands `append`'s options on and shows the inner store's capabilities, so an
// adapter takes its `append(…, { after })` path; without it, options are dropped and no capability
// is shown, as for a store written before the option existed.
import { isTidemarkError } from '@tidemark/core';

const none = () => ({ reads: 0, loads: 0, appends: 0, afters: 0, updates: 0, conflicts: 0 });

/**
 * @param {import('@tidemark/core').SessionStore} inner
 * @param {boolean} capable
 */
export function countingStore(inner, capable) {
  const calls = none();
  /** @type {import('@tidemark/core').SessionStore} */
  const store = {
    create: (init) => inner.create(init),
    async append(id, events, options) {
      calls.appends += 1;
      if (options?.after !== undefined) calls.afters += 1;
      try {
        return await (capable ? inner.append(id, events, options) : inner.append(id, events));
      } catch (error) {
        if (isTidemarkError(error, 'CONFLICT')) calls.conflicts += 1;
        throw error;
      }
    },
    load: (id, options) => {
      calls.loads += 1;
      return inner.load(id, options);
    },
    read: (id, range) => {
      calls.reads += 1;
      return inner.read(id, range);
    },
    list: (query) => inner.list(query),
    has: (id) => inner.has(id),
    update: (id, patch) => {
      calls.updates += 1;
      return inner.update(id, patch);
    },
    delete: (id, options) => inner.delete(id, options),
    close: () => inner.close(),
    ...(capable && inner.capabilities !== undefined && { capabilities: inner.capabilities }),
  };
  return { store, calls, reset: () => Object.assign(calls, none()) };
}
