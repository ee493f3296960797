// A store as another host sees it when a third party acts between its calls: `meanwhile` runs once,
// after the next read or load of the wrapped store has finished (its last event yielded), and
// before the caller's next step. Deterministic, where two racing processes hit the window rarely.

/** @param {import('@tidemark/core').SessionStore} inner */
export function withInterleaving(inner) {
  let pending;
  const runPending = async () => {
    const run = pending;
    pending = undefined;
    await run?.();
  };
  const store = {
    create: (init) => inner.create(init),
    append: (id, events) => inner.append(id, events),
    load: async (id, options) => {
      try {
        return await inner.load(id, options);
      } finally {
        await runPending();
      }
    },
    read: (id, range) =>
      (async function* () {
        try {
          yield* inner.read(id, range);
        } finally {
          await runPending();
        }
      })(),
    list: (query) => inner.list(query),
    has: (id) => inner.has(id),
    update: (id, patch) => inner.update(id, patch),
    delete: (id, options) => inner.delete(id, options),
    close: () => inner.close(),
  };
  return {
    store,
    arm: (meanwhile) => {
      pending = meanwhile;
    },
  };
}
