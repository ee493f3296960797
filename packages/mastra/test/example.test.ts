// The example in the README runs as written (plain Node on the built packages): the second run, on
// a reopened store, is shown the working memory the first run stored and answers from it.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

it('examples/agent.mjs keeps the working memory across a reopened store', async () => {
  const script = fileURLToPath(new URL('../examples/agent.mjs', import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 60_000 });
  expect(stdout.trim().split('\n')).toEqual([
    'first run: Nice to meet you, Ada.',
    'second run: Your name is Ada.',
    'stored messages: 4',
  ]);
});
