// world-testing's server (real workflows through `workflow`, world-local's queue) started as a
// child process on this package's World module, for the tests that kill it or run two at once.
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const SERVER = join(dirname(require.resolve('@workflow/world-testing')), 'server.mjs');
export const WORLD_MODULE = './test/fixtures/tidemark-world.mjs';

export interface Server {
  port: number;
  proc: ChildProcess;
  output: () => string;
  invoke(file: string, workflow: string, args?: unknown[]): Promise<string>;
  events(runId: string): Promise<{ eventType: string; correlationId?: string }[]>;
  status(runId: string): Promise<string>;
  kill(): Promise<void>;
}

export async function startServer(env: Record<string, string>): Promise<Server> {
  const proc = spawn(process.execPath, [SERVER], {
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env, WORKFLOW_TARGET_WORLD: WORLD_MODULE, CONTROL_FD: '3', PORT: '' },
  });
  let output = '';
  proc.stdout?.on('data', (chunk) => (output += String(chunk)));
  proc.stderr?.on('data', (chunk) => (output += String(chunk)));
  const port = await new Promise<number>((resolve, reject) => {
    let control = '';
    const fd3 = proc.stdio[3] as NodeJS.ReadableStream;
    fd3.on('data', (chunk) => {
      control += String(chunk);
      const line = control.split('\n')[0];
      if (line !== undefined && control.includes('\n'))
        resolve((JSON.parse(line) as { info: { port: number } }).info.port);
    });
    proc.on('exit', (code) => reject(new Error(`server exited (${code}) before listening:\n${output}`)));
  });
  const base = `http://localhost:${port}`;
  return {
    port,
    proc,
    output: () => output,
    async invoke(file, workflow, args = []) {
      const res = await fetch(`${base}/invoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ file, workflow, args }),
      });
      if (!res.ok) throw new Error(`invoke: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { runId: string }).runId;
    },
    async events(runId) {
      const res = await fetch(`${base}/runs/${encodeURIComponent(runId)}/events`);
      if (!res.ok) throw new Error(`events: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { events: { eventType: string; correlationId?: string }[] }).events;
    },
    async status(runId) {
      const res = await fetch(`${base}/runs/${encodeURIComponent(runId)}`);
      if (!res.ok) throw new Error(`run: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { status: string }).status;
    },
    kill: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGKILL');
      }),
  };
}

/** Polls `probe` until it returns a value (not undefined), or fails after `timeoutMs`. */
export async function until<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}${last !== undefined ? `: ${String(last)}` : ''}`);
}
