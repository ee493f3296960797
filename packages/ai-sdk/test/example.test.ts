// The example in the README runs as written (plain Node on the built packages) and prints the
// saved chat: two full turns, an aborted third, one active-stream claim won of two.
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
    'assistant Every save lands whole or not at all.',
  ]);
  expect(lines[4]).toBe('user      Tell me more');
  expect(lines[5]).toMatch(/^assistant It/);
  expect(lines[5]).not.toContain('fault harness');
  expect(lines[6]).toMatch(
    /^last stream aborted: true; active stream: stream-[AB] \(claims: (true, false|false, true)\)$/,
  );
});
