// A real Mastra workflow that suspends, its process killed with SIGKILL, resumed in a new process
// from the snapshot in the tidemark store, and run to its end: never "no snapshot found".
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { openStoreAt, type SharedStore, sharedBackends } from '@tidemark/test-hosts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TidemarkMastraStore } from '../src/index.js';

const SCRIPT = fileURLToPath(new URL('./fixtures/workflow-run.mjs', import.meta.url));
const TIMEOUT = 120_000;

/** Starts the run, waits for it to report the suspension, and kills it with SIGKILL. */
function startAndKill(shared: SharedStore, runId: string): Promise<string> {
  const child = spawn(process.execPath, [SCRIPT, JSON.stringify(shared.address), 'start', runId], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('exit', (_code, signal) =>
      signal === 'SIGKILL' ? resolve(out.trim()) : reject(new Error(`exited: ${out}`)),
    );
  });
}

describe.each(await sharedBackends())('a Mastra workflow on $name', (backend) => {
  let shared: SharedStore;
  beforeEach(async () => {
    shared = await backend.create();
  }, TIMEOUT);
  afterEach(() => shared.cleanup(), TIMEOUT);

  it('suspends, is killed, and resumes to its end in a new process', { timeout: TIMEOUT }, async () => {
    expect(await startAndKill(shared, 'run-1')).toBe('suspended');
    const store = await openStoreAt(shared.address);
    const workflows = (await new TidemarkMastraStore({ store }).getStore('workflows'))!;
    try {
      const suspended = await workflows.loadWorkflowSnapshot({ workflowName: 'approval', runId: 'run-1' });
      expect(suspended?.status).toBe('suspended');
      expect(suspended?.context.double).toMatchObject({ status: 'success', output: { n: 6 } });
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [SCRIPT, JSON.stringify(shared.address), 'resume', 'run-1'],
        { timeout: TIMEOUT },
      );
      expect(JSON.parse(stdout.trim())).toEqual({ status: 'success', result: { n: 100 } });
      const done = await workflows.getWorkflowRunById({ runId: 'run-1', workflowName: 'approval' });
      expect((done!.snapshot as { status: string }).status).toBe('success');
    } finally {
      await store.close();
    }
  });
});
