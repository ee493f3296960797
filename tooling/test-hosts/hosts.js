// The parent's side of a host process (host-child.js): start it over a shared store, call methods
// of its adapter object, close or kill it. Values travel by structured clone (Uint8Array, Map and
// Date survive); a rejection comes back as a TidemarkError with the same code and message.
//
// A closed host's process is kept, idle, and serves the next startHost: each host still gets its
// own store handle and its own adapter object, built by the host module in that call, but not a
// new Node process. Starting one cost about 2 CPU-seconds for the heavier frameworks (importing
// them), once per test, which made the adapters' hosts tests the longest files after the
// harness's. A killed host's process is gone, and one whose close failed is killed, so neither is
// reused.
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

/** Processes whose last host closed cleanly, waiting for the next one (unreferenced meanwhile). */
const idle = [];

/** A host process; `session` receives its messages while a host runs in it. */
function spawnProcess() {
  const child = fork(CHILD, [], {
    // Not the test runner's flags: its --conditions would make the host load workspace sources
    // (TypeScript) instead of the built packages a user's process loads.
    execArgv: [],
    env: withoutConditions(process.env),
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const proc = { child, exited: false, session: undefined };
  child.on('message', (message) => proc.session?.onMessage(message));
  child.on('exit', (code, signal) => {
    proc.exited = true;
    const at = idle.indexOf(proc);
    if (at >= 0) idle.splice(at, 1);
    proc.session?.onExit(new Error(`host process ${child.pid} exited (${signal ?? code})`));
  });
  return proc;
}

function takeProcess() {
  const proc = idle.pop() ?? spawnProcess();
  // Referenced while a host runs, so a test waiting on it keeps this process alive.
  proc.child.ref();
  proc.child.channel?.ref();
  return proc;
}

function putBack(proc) {
  proc.session = undefined;
  if (proc.exited) return;
  // An idle process must not keep the test worker alive; it exits when the worker does (its IPC
  // channel closes, see host-child.js).
  proc.child.unref();
  proc.child.channel?.unref();
  idle.push(proc);
}

/**
 * Starts a host over the store at `address`, in a new process or an idle one. `module` (a path or
 * URL) default-exports `(store, options) => adapterObject`; `host.call(name, ...args)` runs
 * `adapterObject[name](...args)`.
 */
export function startHost(address, module, options = {}) {
  const moduleUrl = module instanceof URL ? module.href : pathToFileURL(String(module)).href;
  const proc = takeProcess();
  const { child } = proc;
  const pending = new Map();
  let nextId = 0;
  // Set once the host closed or its process exited (a process that exited while idle left `idle`).
  let ended;
  let onReady;
  let onClosed;
  const ready = new Promise((resolve, reject) => {
    onReady = { resolve, reject };
  });
  proc.session = {
    onMessage(message) {
      if (message.type === 'ready') onReady.resolve();
      else if (message.type === 'failed') onReady.reject(revive(message.error));
      else if (message.type === 'closed') onClosed?.(message.error);
      else {
        const call = pending.get(message.id);
        if (call === undefined) return;
        pending.delete(message.id);
        if (message.type === 'result') call.resolve(message.value);
        else call.reject(revive(message.error));
      }
    },
    onExit(gone) {
      ended = `host process ${child.pid} has exited`;
      onReady.reject(gone);
      for (const call of pending.values()) call.reject(gone);
      pending.clear();
      onClosed?.();
    },
  };
  child.send({ type: 'init', address, module: moduleUrl, options: options.hostOptions });
  const host = {
    pid: child.pid,
    call(method, ...args) {
      if (ended !== undefined) return Promise.reject(new Error(ended));
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.send({ type: 'call', id, method, args });
      });
    },
    close() {
      if (ended !== undefined) return Promise.resolve();
      ended = `host process ${child.pid} has closed`;
      return new Promise((resolve) => {
        onClosed = (error) => {
          onClosed = undefined;
          if (error === undefined && !proc.exited) {
            putBack(proc);
            resolve();
          } else {
            // A close that failed may have left the store open: never hand that process on.
            proc.session = undefined;
            if (proc.exited) resolve();
            else {
              child.once('exit', () => resolve());
              child.kill('SIGKILL');
            }
          }
        };
        child.send({ type: 'close' });
      });
    },
    kill(signal = 'SIGKILL') {
      ended = `host process ${child.pid} has exited`;
      return new Promise((resolve) => {
        if (proc.exited) resolve();
        else {
          child.once('exit', () => resolve());
          child.kill(signal);
        }
      });
    },
  };
  return ready.then(
    () => host,
    (error) => {
      // A host module that failed to build: that process may hold a half-opened store.
      proc.session = undefined;
      if (!proc.exited) child.kill('SIGKILL');
      throw error;
    },
  );
}
