// The parent's side of a host process (host-child.js): start it over a shared store, call methods
// of its adapter object, close or kill it. Values travel by structured clone (Uint8Array, Map and
// Date survive); a rejection comes back as a TidemarkError with the same code and message.
import { fork } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { TidemarkError } from '@tidemark/core';

const CHILD = fileURLToPath(new URL('./host-child.js', import.meta.url));

function revive(described) {
  if (described.code !== undefined && described.name === 'TidemarkError') {
    return new TidemarkError(described.code, described.message, {
      sessionId: described.sessionId,
      retryable: described.retryable,
    });
  }
  const error = new Error(described.message);
  error.name = described.name;
  if (described.stack) error.stack = described.stack;
  return error;
}

function withoutConditions(env) {
  const options = (env.NODE_OPTIONS ?? '').replace(/(^|\s)(--conditions|-C)(=|\s+)\S+/g, '').trim();
  return { ...env, NODE_OPTIONS: options };
}

/**
 * Starts a host process over the store at `address`. `module` (a path or URL) default-exports
 * `(store, options) => adapterObject`; `host.call(name, ...args)` runs `adapterObject[name](...args)`.
 */
export function startHost(address, module, options = {}) {
  const moduleUrl = module instanceof URL ? module.href : pathToFileURL(String(module)).href;
  const child = fork(CHILD, [], {
    // Not the test runner's flags: its --conditions would make the host load workspace sources
    // (TypeScript) instead of the built packages a user's process loads.
    execArgv: [],
    env: withoutConditions(process.env),
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map();
  let nextId = 0;
  let exited = false;
  let onReady;
  let onClosed;
  const ready = new Promise((resolve, reject) => {
    onReady = { resolve, reject };
  });
  child.on('message', (message) => {
    if (message.type === 'ready') onReady.resolve();
    else if (message.type === 'failed') onReady.reject(revive(message.error));
    else if (message.type === 'closed') onClosed?.();
    else {
      const call = pending.get(message.id);
      if (call === undefined) return;
      pending.delete(message.id);
      if (message.type === 'result') call.resolve(message.value);
      else call.reject(revive(message.error));
    }
  });
  child.on('exit', (code, signal) => {
    exited = true;
    const gone = new Error(`host process ${child.pid} exited (${signal ?? code})`);
    onReady.reject(gone);
    for (const call of pending.values()) call.reject(gone);
    pending.clear();
    onClosed?.();
  });
  child.send({ type: 'init', address, module: moduleUrl, options: options.hostOptions });
  const host = {
    pid: child.pid,
    call(method, ...args) {
      if (exited) return Promise.reject(new Error(`host process ${child.pid} has exited`));
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.send({ type: 'call', id, method, args });
      });
    },
    close() {
      if (exited) return Promise.resolve();
      return new Promise((resolve) => {
        onClosed = resolve;
        child.send({ type: 'close' });
      });
    },
    kill(signal = 'SIGKILL') {
      child.kill(signal);
      return new Promise((resolve) => {
        if (exited) resolve();
        else child.once('exit', () => resolve());
      });
    },
  };
  return ready.then(() => host);
}
