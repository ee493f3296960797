// A store as another host sees it when a third party acts between its calls: `meanwhile` runs once,
// after the next read or load of the wrapped store has finished (its last event yielded), and
// before the caller's next step. Deterministic, where two racing processes hit the window rarely.
// With `passAfter`, the wrapper hands `append`'s options on and shows the inner store's
// capabilities, so an adapter takes its `append(…, { after })` path; `meanwhile` then also runs
// right before the next append when no read came first (a warm write on that path reads nothing).
// Without it, options are dropped and no capability is shown: the adapter's confirming-read path.

/**
 * @param {import('@tidemark/core').SessionStore} inner
 * @param {{ passAfter?: boolean }} [options]
 */
export function withInterleaving(inner, options = {}) {
  const passAfter = options.passAfter === true;
  let pending;
  const runPending = async () => {
    const run = pending;
    pending = undefined;
    await run?.();
  };
  const store = {
    create: (init) => inner.create(init),
    append: async (id, events, appendOptions) => {
      if (!passAfter) return inner.append(id, events);
      await runPending();
      return inner.append(id, events, appendOptions);
    },
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
    ...(passAfter && inner.capabilities !== undefined && { capabilities: inner.capabilities }),
  };
  return {
    store,
    arm: (meanwhile) => {
      pending = meanwhile;
    },
  };
}
