// A chat route of the Vercel AI SDK persisted on tidemark, run offline: the real `streamText`
// with the AI SDK's mock language model, chats in a JSONL store in a temporary directory.
//
//   pnpm --filter '@tidemark/ai-sdk...' build && node packages/ai-sdk/examples/chat-route.mjs
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createChatStore } from '@tidemark/ai-sdk';
import { isTidemarkError } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { consumeStream, convertToModelMessages, generateId, streamText } from 'ai';
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';

/** The mock model: streams `reply` word by word. */
function mockModel(reply) {
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: simulateReadableStream({
        chunkDelayInMs: 5,
        chunks: [
          { type: 'text-start', id: 't' },
          ...reply.split(/(?= )/).map((delta) => ({ type: 'text-delta', id: 't', delta })),
          { type: 'text-end', id: 't' },
          {
            type: 'finish',
            finishReason: { unified: 'stop', raw: 'stop' },
            usage: { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } },
          },
        ],
      }),
    }),
  });
}

/**
 * POST /api/chat: the client sends its chat id, only its new message, and the AI SDK's `trigger`
 * (`submit-message`, or `regenerate-message` for a new answer to its last message). Returns the
 * response and, for this demo, a promise that settles once the end handler has saved.
 */
async function postChat(chats, { id, message, trigger = 'submit-message' }, reply, abortSignal) {
  // The version loaded makes the save on finish a compare-and-set: if another request saved this
  // chat meanwhile, the save is CONFLICT and writes nothing, instead of overwriting that request.
  const { messages: stored, version } = await chats.loadChatState(id);
  // A regenerate drops the stored answer to the last user message; the new answer replaces it.
  const messages =
    trigger === 'regenerate-message'
      ? stored.slice(0, stored.findLastIndex((m) => m.role === 'user') + 1)
      : [...stored, message];
  const result = streamText({
    model: mockModel(reply),
    messages: await convertToModelMessages(messages),
    abortSignal,
  });
  const onEnd = chats.onEnd(id, { version }); // saves new and changed messages, records aborts
  let saved;
  const response = result.toUIMessageStreamResponse({
    originalMessages: messages,
    generateMessageId: generateId,
    consumeSseStream: consumeStream, // a client that goes away does not stop the save
    onFinish: (event) => {
      saved = onEnd(event).catch((error) =>
        // Another request (another tab, another server) saved first: add this turn on top of
        // what the chat holds now. A regenerate is not applied again: its client asks anew.
        isTidemarkError(error, 'CONFLICT') && trigger === 'submit-message'
          ? saveOnTop(chats, id, [message, event.responseMessage])
          : Promise.reject(error),
      );
      return saved;
    },
  });
  return { response, saved: () => saved };
}

/** Saves `turn` after what the chat holds now (load, append, compare-and-set save). */
async function saveOnTop(chats, id, turn) {
  conflicts++;
  const { messages, version } = await chats.loadChatState(id);
  await chats.saveChat({ chatId: id, messages: [...messages, ...turn], version });
}
let conflicts = 0;

const user = (text) => ({ id: generateId(), role: 'user', parts: [{ type: 'text', text }] });
const textOf = (m) => m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');

const root = await mkdtemp(join(tmpdir(), 'tidemark-ai-sdk-example-'));
const store = await openJsonlStore({ root });
const chats = createChatStore({ store, validation: {} }); // {}: validateUIMessages on every load
try {
  const id = await chats.createChat();
  for (const [question, reply] of [
    ['What is tidemark?', 'Durable session logs for agents.'],
    ['And on a crash?', 'Every save lands whole or not at all.'],
  ]) {
    const turn = await postChat(chats, { id, message: user(question) }, reply);
    await turn.response.text(); // the browser reads the stream; the save happens as it ends
    await turn.saved();
  }

  // "Regenerate" on the last answer: the new one replaces it.
  const again = await postChat(
    chats,
    { id, trigger: 'regenerate-message' },
    'A save lands whole or not at all.',
  );
  await again.response.text();
  await again.saved();

  // Two tabs send at once: both load the same version; whichever stream ends second has its save
  // refused as stale, and its turn is added on top of the other one's.
  const tabs = [
    await postChat(chats, { id, message: user('Which backends?') }, 'JSONL, SQLite and PostgreSQL.'),
    await postChat(chats, { id, message: user('And the UI?') }, 'A local viewer.'),
  ];
  for (const tab of tabs) {
    await tab.response.text();
    await tab.saved();
  }

  // A turn whose client presses "stop".
  const stop = new AbortController();
  const turn = await postChat(
    chats,
    { id, message: user('Tell me more') },
    'It has many backends and a fault harness',
    stop.signal,
  );
  const reader = turn.response.body.getReader();
  let seen = '';
  while (!seen.includes('text-delta')) seen += new TextDecoder().decode((await reader.read()).value);
  stop.abort();
  while (!(await reader.read()).done);
  await turn.saved();

  // A resumable stream: one server claims the active stream id, a second one loses the race.
  const claimed = await Promise.all([
    chats.setActiveStreamId(id, null, 'stream-A'),
    chats.setActiveStreamId(id, null, 'stream-B'),
  ]);

  // Another server (its own store instance) loads the chat.
  const other = await openJsonlStore({ root });
  const state = await createChatStore({ store: other }).loadChatState(id);
  await other.close();
  for (const m of state.messages) console.log(`${m.role.padEnd(9)} ${textOf(m)}`);
  console.log(
    `last stream aborted: ${state.lastEnd?.aborted}; active stream: ${state.activeStreamId} (claims: ${claimed.join(', ')})`,
  );
  console.log(`saves refused as stale and applied again: ${conflicts}`);
} finally {
  await store.close();
  await rm(root, { recursive: true, force: true });
}
