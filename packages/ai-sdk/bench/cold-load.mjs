// A cold `loadChat` of a long chat: a new process opens the store and loads the chat once. The
// chat is written as a chat route writes it: BENCH_TURNS turns (default 1,000), each saving the
// user's message when it arrives and the whole list again when the reply ends, so 2,000 messages
// in 2,000 saves. Measured on SQLite and JSONL (BENCH_BACKENDS): the first loadChat of a new
// process (median of BENCH_COLD runs, default 5; store opened before timing, and with the open),
// and a warm loadChat in the writer's process (median of 20). Results go to stdout.
// With BENCH_BEFORE=<path of another build's index.js> (an earlier version of this package), the
// cold loads of that build run on the same file too, alternating with this one's, so that both
// meet the same machine load.
//
//   pnpm --filter '@tidemark/ai-sdk...' build && node packages/ai-sdk/bench/cold-load.mjs
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { openJsonlStore } from '@tidemark/jsonl';
import { openSqliteStore } from '@tidemark/sqlite';

const TURNS = Number(process.env.BENCH_TURNS ?? 1000);
const COLD = Number(process.env.BENCH_COLD ?? 5);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'sqlite,jsonl').split(',');
const CHAT = 'bench-chat';
const now = () => performance.now();
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const open = (backend, location) =>
  backend === 'sqlite'
    ? openSqliteStore({ path: location, durability: 'relaxed' })
    : openJsonlStore({ root: location, durability: 'relaxed' });

const text = (role, i) => `${role} ${i}: ${'lorem ipsum dolor sit amet '.repeat(12)}`;
const message = (role, i) => ({ id: `${role[0]}${i}`, role, parts: [{ type: 'text', text: text(role, i) }] });

if (process.argv[2] === '--child') {
  // One cold load: [backend, location, module] → prints { open, load } in ms.
  const [, , , backend, location, module] = process.argv;
  const { createChatStore } = await import(module);
  const t0 = now();
  const store = await open(backend, location);
  const t1 = now();
  const messages = await createChatStore({ store }).loadChat(CHAT);
  const t2 = now();
  await store.close();
  if (messages.length !== 2 * TURNS) throw new Error(`loaded ${messages.length} messages`);
  process.stdout.write(JSON.stringify({ open: t1 - t0, load: t2 - t1 }));
} else {
  const script = fileURLToPath(import.meta.url);
  const current = new URL('../dist/index.js', import.meta.url).href;
  const before = process.env.BENCH_BEFORE && pathToFileURL(process.env.BENCH_BEFORE).href;
  const { createChatStore } = await import(current);
  for (const backend of BACKENDS) {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-ai-sdk-bench-'));
    const location = backend === 'sqlite' ? join(dir, 'chats.db') : dir;
    try {
      const store = await open(backend, location);
      const chats = createChatStore({ store });
      const list = [];
      const tw = now();
      for (let i = 0; i < TURNS; i++) {
        list.push(message('user', i));
        await chats.saveChat({ chatId: CHAT, messages: list });
        list.push(message('assistant', i));
        await chats.saveChat({ chatId: CHAT, messages: list });
      }
      const write = now() - tw;
      const warm = [];
      for (let i = 0; i < 20; i++) {
        const t = now();
        await chats.loadChat(CHAT);
        warm.push(now() - t);
      }
      await store.close();
      const coldLoad = (module) =>
        JSON.parse(
          String(
            execFileSync(process.execPath, [script, '--child', backend, location, module], {
              env: { ...process.env, BENCH_TURNS: String(TURNS) },
            }),
          ),
        );
      const cold = [];
      const coldBefore = [];
      for (let i = 0; i < COLD; i++) {
        cold.push(coldLoad(current));
        if (before) coldBefore.push(coldLoad(before));
      }
      const fmt = (ms) => `${ms.toFixed(1)} ms`;
      if (before) {
        console.log(
          `${backend}: the build at BENCH_BEFORE, cold loadChat of the same file ${fmt(median(coldBefore.map((c) => c.load)))} ` +
            `(runs ${coldBefore.map((c) => c.load.toFixed(1)).join(', ')})`,
        );
      }
      console.log(
        `${backend}: ${2 * TURNS} messages in ${2 * TURNS} saves (written in ${(write / 1000).toFixed(1)} s); ` +
          `cold loadChat ${fmt(median(cold.map((c) => c.load)))} ` +
          `(with the open ${fmt(median(cold.map((c) => c.open + c.load)))}; runs ${cold.map((c) => c.load.toFixed(1)).join(', ')}); ` +
          `warm loadChat ${fmt(median(warm))}`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
