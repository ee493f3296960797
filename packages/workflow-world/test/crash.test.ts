// A real workflow (world-testing's sleepWorkflow: `await sleep('1s')`, then a step) on a tidemark
// store: the server is killed with SIGKILL while the run sleeps, which loses every message
// world-local's in-memory queue held. A new server on the same store starts, re-enqueues the
// runs that are not finished from tidemark's logs, and the run completes with each step run once,
// the sleep completed once, and one run_completed; the log on disk is the same events in seq order.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropSchemas, postgresAvailable } from '@tidemark/test-hosts';
import { afterAll, describe, expect, it } from 'vitest';
import { type Server, startServer, until } from './server.js';

const root = mkdtempSync(join(tmpdir(), 'tidemark-ww-crash-'));
const servers: Server[] = [];
afterAll(async () => {
  for (const server of servers) await server.kill();
  rmSync(root, { recursive: true, force: true });
  if (stores.length > 2) await dropSchemas(`ww_crash_${process.pid}`);
});

const stores: [string, string][] = [
  ['JSONL', `jsonl:${join(root, 'jsonl')}`],
  ['SQLite', `sqlite:${join(root, 'runs.db')}`],
];
if (await postgresAvailable()) stores.push(['PostgreSQL', `postgres:ww_crash_${process.pid}`]);

const countOf = (events: { eventType: string }[], type: string) =>
  events.filter((e) => e.eventType === type).length;

describe.each(stores)('SIGKILL during a sleep on %s', (_name, address) => {
  it('completes after a restart, each step run once', async () => {
    const env = { TIDEMARK_WORLD_STORE: address, TIDEMARK_WORLD_QUEUE_DIR: join(root, 'queue') };
    const first = await startServer(env);
    servers.push(first);
    const runId = await first.invoke('workflows/inline-execution.ts', 'sleepWorkflow');
    const before = await until(
      async () => {
        const events = await first.events(runId);
        return events.some((e) => e.eventType === 'wait_created') ? events : undefined;
      },
      20_000,
      'the run to start sleeping',
    );
    await first.kill();
    expect(countOf(before, 'run_completed'), 'killed before the run ended').toBe(0);

    const second = await startServer(env);
    servers.push(second);
    await until(
      async () => ((await second.status(runId)) === 'completed' ? true : undefined),
      30_000,
      `run ${runId} to complete:\n${second.output()}`,
    );
    const events = await second.events(runId);
    const steps = new Set(events.filter((e) => e.eventType === 'step_created').map((e) => e.correlationId));
    expect(steps.size).toBe(1);
    for (const step of steps) {
      const of = events.filter((e) => e.correlationId === step).map((e) => e.eventType);
      expect(of, `step ${step}`).toEqual(['step_created', 'step_started', 'step_completed']);
    }
    expect(countOf(events, 'wait_created')).toBe(1);
    expect(countOf(events, 'wait_completed')).toBe(1);
    expect(countOf(events, 'run_started')).toBe(1);
    expect(countOf(events, 'run_completed')).toBe(1);
    // What the first process acknowledged is the start of what the second one reads.
    expect(events.slice(0, before.length)).toEqual(before);
    await second.kill();
  });
});
