// A JSONL store seeded with the sessions the browser must show: a finished turn with tool calls,
// an interrupted tail, a fork, a title that is markup, a CORRUPT log, a session whose summary
// cannot be read, and filler enough for more than one list page.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SessionEvent, SessionStore } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';

/** Ids of the seeded sessions the tests look for. */
export const SEEDED = {
  finished: 'sess-finished',
  interrupted: 'sess-interrupted',
  fork: 'sess-fork',
  markup: 'sess-markup',
  corrupt: 'sess-corrupt',
  unreadableSummary: 'sess-bad-summary',
} as const;

/** A title that would run script if it were put into the page as HTML. */
export const MARKUP_TITLE = '<img src=x onerror="window.__xss=1">';

let clock = Date.parse('2025-05-01T09:00:00Z');
function at(): string {
  clock += 1000;
  return new Date(clock).toISOString();
}

function turn(
  first: number,
  prompt: string,
  callId: string,
  output: string,
  finished: boolean,
): SessionEvent[] {
  const events: SessionEvent[] = [
    { seq: first, type: 'turn/start', time: at(), data: {} },
    { seq: first + 1, type: 'user/message', time: at(), data: { text: prompt } },
    {
      seq: first + 2,
      type: 'assistant/message',
      time: at(),
      data: { text: 'Let me look at the test output first.' },
    },
    {
      seq: first + 3,
      type: 'tool/call',
      time: at(),
      data: { callId, name: 'bash', input: { command: 'pnpm test' } },
    },
    { seq: first + 4, type: 'tool/result', time: at(), data: { callId, output } },
  ];
  if (finished) {
    events.push({
      seq: first + 5,
      type: 'assistant/message',
      time: at(),
      data: { text: 'The flaky test waits on a timer; fixed.' },
    });
    events.push({ seq: first + 6, type: 'turn/end', time: at(), data: {} });
  }
  return events;
}

async function session(
  store: SessionStore,
  init: { id: string; title?: string; cwd?: string; tags?: string[]; parent?: { id: string; seq: number } },
  events: SessionEvent[],
): Promise<void> {
  await store.create(init);
  await store.append(init.id, events);
}

const LONG_OUTPUT = Array.from({ length: 40 }, (_, i) => `  ✓ test ${i + 1} passed (${i * 3} ms)`).join('\n');

/** Seeds `root` with the sessions above and `filler` plain ones; returns the closed store's root. */
export async function seedJsonlStore(root: string, filler = 60): Promise<void> {
  const store = await openJsonlStore({ root, durability: 'relaxed' });
  for (let i = 0; i < filler; i++) {
    await session(
      store,
      { id: `filler-${String(i).padStart(3, '0')}`, title: `Routine session ${i}`, cwd: '/srv/app' },
      turn(0, `Routine prompt ${i}`, `f${i}`, 'ok', true),
    );
  }
  await session(
    store,
    { id: SEEDED.finished, title: 'Fix the flaky build', cwd: '/home/ana/shop', tags: ['ci', 'flaky'] },
    turn(0, 'Why does CI fail on main?', 'call-1', LONG_OUTPUT, true),
  );
  await session(
    store,
    {
      id: SEEDED.fork,
      title: 'Try a different fix',
      cwd: '/home/ana/shop',
      parent: { id: SEEDED.finished, seq: 6 },
    },
    turn(0, 'Try pinning the timer instead', 'call-2', 'ok', true),
  );
  await session(
    store,
    { id: SEEDED.markup, title: MARKUP_TITLE, cwd: '/tmp/<b>x</b>' },
    turn(0, '<script>window.__xss=2</script>', 'call-3', '<img src=x onerror="window.__xss=3">', true),
  );
  await session(
    store,
    { id: SEEDED.corrupt, title: 'Damaged on disk', cwd: '/home/ana/shop' },
    turn(0, 'First turn', 'call-4', 'fine', true),
  );
  await store.append(SEEDED.corrupt, turn(7, 'Second turn', 'call-5', 'fine', true));
  await session(
    store,
    { id: SEEDED.unreadableSummary, title: 'Summary will break', cwd: '/home/ana/shop' },
    turn(0, 'Anything', 'call-6', 'fine', true),
  );
  await session(
    store,
    { id: SEEDED.interrupted, title: 'Migrate the database', cwd: '/home/ana/shop', tags: ['db'] },
    turn(0, 'Plan the migration of the orders table', 'call-7', 'orders: 3 columns to change', true),
  );
  // A finished turn, then one a crash cut short: the second turn is the interrupted tail.
  await store.append(
    SEEDED.interrupted,
    turn(7, 'Now run the migration', 'call-8', 'ALTER TABLE orders …', false),
  );
  await store.close();
  await damage(root, `${SEEDED.corrupt}.jsonl`, (text) => {
    // A bit flip inside the second batch: the first turn still reads, then CORRUPT.
    const lines = text.split('\n');
    const second = lines.findIndex((line) => line.includes('Second turn'));
    lines[second] = lines[second]!.replace('Second turn', 'Second tUrn');
    return lines.join('\n');
  });
  // Neither the sidecar nor the log's header can be read: list can only report it as a problem.
  await damage(root, `${SEEDED.unreadableSummary}.summary.json`, () => '{not json');
  await damage(root, `${SEEDED.unreadableSummary}.jsonl`, (text) => `#${text.slice(1)}`);
}

async function damage(root: string, name: string, change: (text: string) => string): Promise<void> {
  for (const bucket of await readdir(root)) {
    const path = join(root, bucket, name);
    const text = await readFile(path, 'utf8').catch(() => undefined);
    if (text !== undefined) {
      await writeFile(path, change(text));
      return;
    }
  }
  throw new Error(`seed: ${name} not found under ${root}`);
}
