// A host process: opens the shared store named by the parent, builds the test's adapter object over
// it with the host module's default export, and runs the parent's calls on that one long-lived
// object, in the order they arrive, until told to close. Then it waits for the next host (hosts.js
// keeps idle processes), and exits when the parent goes away.
import { openStoreAt } from './stores.js';

let store;
let target;

function send(message) {
  process.send?.(message);
}

/** An error as plain data; the parent makes a TidemarkError of it again. */
function describe(error) {
  if (error instanceof Error) {
    return {
      name: error.name,
      message: error.message,
      code: typeof error.code === 'string' ? error.code : undefined,
      retryable: typeof error.retryable === 'boolean' ? error.retryable : undefined,
      sessionId: typeof error.sessionId === 'string' ? error.sessionId : undefined,
      stack: error.stack,
    };
  }
  return { name: 'Error', message: String(error) };
}

process.on('message', async (message) => {
  switch (message.type) {
    case 'init':
      try {
        store = await openStoreAt(message.address);
        const { default: build } = await import(message.module);
        target = await build(store, message.options);
        send({ type: 'ready' });
      } catch (error) {
        send({ type: 'failed', error: describe(error) });
      }
      return;
    case 'call':
      try {
        const method = target[message.method];
        if (typeof method !== 'function') throw new Error(`the host has no method ${message.method}`);
        const value = await method.apply(target, message.args);
        send({ type: 'result', id: message.id, value });
      } catch (error) {
        send({ type: 'error', id: message.id, error: describe(error) });
      }
      return;
    case 'close': {
      let failure;
      try {
        await target?.close?.();
      } catch (error) {
        failure = describe(error);
      }
      try {
        await store?.close();
      } catch (error) {
        failure ??= describe(error);
      }
      store = undefined;
      target = undefined;
      send(failure === undefined ? { type: 'closed' } : { type: 'closed', error: failure });
      return;
    }
  }
});

// The parent (a test worker) is gone: nothing is left to serve.
process.on('disconnect', () => process.exit(0));
