// The example in the README runs as written (plain Node on the built packages) and prints the
// saved chat: two full turns, a regenerated answer, two tabs at once (the stale save refused and
// applied again on top), an aborted turn, one active-stream claim won of two.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

it('examples/chat-route.mjs drives streamText offline and saves the chat', async () => {
  const script = fileURLToPath(new URL('../examples/chat-route.mjs', import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 60_000 });
  const lines = stdout.trim().split('\n');
  expect(lines.slice(0, 4)).toEqual([
    'user      What is tidemark?',
    'assistant Durable session logs for agents.',
    'user      And on a crash?',
    // The regenerated answer replaced the first one ("Every save lands whole or not at all.").
    'assistant A save lands whole or not at all.',
  ]);
  // Two tabs at once: whichever stream ends second has its save refused as stale, and its turn is
  // added on top of the other's. Which one that is depends on how the two streams interleave (it
  // changed when the JSONL store's small reads became synchronous), so either order, each turn whole.
  const backends = ['user      Which backends?', 'assistant JSONL, SQLite and PostgreSQL.'];
  const ui = ['user      And the UI?', 'assistant A local viewer.'];
  expect([
    [...backends, ...ui],
    [...ui, ...backends],
  ]).toContainEqual(lines.slice(4, 8));
  expect(lines[8]).toBe('user      Tell me more');
  expect(lines[9]).toMatch(/^assistant It/);
  expect(lines[9]).not.toContain('fault harness');
  expect(lines[10]).toMatch(
    /^last stream aborted: true; active stream: stream-[AB] \(claims: (true, false|false, true)\)$/,
  );
  expect(lines[11]).toBe('saves refused as stale and applied again: 1');
});
