// The workloads of issue 14. Each has a setup per subject (untimed), a round that returns
// milliseconds per operation for each of its metrics (lower is better), and a teardown that may
// report more (bytes on disk). run.mjs interleaves the rounds of all subjects.
import { batch, bytesUnder, event, median, now, SIZES, sessionId, TURN, timed } from './common.mjs';

/** Opens a subject's store with `count` sessions of one event each, ready for appends. */
async function withSessions(subject, dir, prefix, count) {
  const handle = await subject.open(dir);
  const ids = Array.from({ length: count }, (_, i) => sessionId(prefix, i));
  for (const id of ids) await handle.append(id, [event(0)]);
  return { handle, ids, next: new Map(ids.map((id) => [id, 1])) };
}

/** One more batch of `count` events on session `id` of `state`, at its next seq. */
async function appendNext(state, id, count, closes) {
  const seq = state.next.get(id);
  state.next.set(id, seq + count);
  await state.handle.append(id, count === 1 ? [event(seq, closes)] : batch(seq, count, closes));
}

// W1 and W2 rounds are cut in this many slices, interleaved with the other subjects' (run.mjs).
const SLICES = 10;

const closeHandle = async (state) => {
  await state.handle.close();
  return {};
};

const w1 = {
  id: 'W1',
  title: 'durable 1-event appends (one session)',
  metrics: { append: 'ms per append' },
  slices: SLICES,
  setup: (subject, dir) => withSessions(subject, dir, 'w1-', 1),
  async round(state) {
    const ms = await timed(async () => {
      for (let i = 0; i < SIZES.w1Appends / SLICES; i++) await appendNext(state, state.ids[0], 1, false);
    });
    return { append: ms / (SIZES.w1Appends / SLICES) };
  },
  teardown: closeHandle,
};

const w2 = {
  id: 'W2',
  title: `durable ${TURN}-event turns (one append each, ending in turn/end)`,
  metrics: { turn: 'ms per turn' },
  slices: SLICES,
  setup: (subject, dir) => withSessions(subject, dir, 'w2-', 1),
  async round(state) {
    const ms = await timed(async () => {
      for (let i = 0; i < SIZES.w2Turns / SLICES; i++) await appendNext(state, state.ids[0], TURN, true);
    });
    return { turn: ms / (SIZES.w2Turns / SLICES) };
  },
  teardown: closeHandle,
};

const w3 = {
  id: 'W3',
  title: `load of a ${SIZES.w3Events.toLocaleString('en')}-event session`,
  metrics: { load: 'ms per load' },
  async setup(subject, dir) {
    const state = await withSessions(subject, dir, 'w3-', 1);
    // Written in 100-event appends (turns), durable like everything else; the load is measured.
    while (state.next.get(state.ids[0]) < SIZES.w3Events) {
      const left = SIZES.w3Events - state.next.get(state.ids[0]);
      await appendNext(state, state.ids[0], Math.min(100, left), true);
    }
    await loadChecked(state); // warms the page cache and the JIT for every subject alike
    return { ...state, dir };
  },
  async round(state) {
    const times = [];
    for (let i = 0; i < SIZES.w3Loads; i++) times.push(await timed(() => loadChecked(state)));
    return { load: median(times) };
  },
  async teardown(state) {
    await state.handle.close();
    return { bytesOnDisk: bytesUnder(state.dir) };
  },
};

async function loadChecked(state) {
  const count = await state.handle.load(state.ids[0]);
  if (count !== SIZES.w3Events) throw new Error(`load gave ${count} of ${SIZES.w3Events} events`);
}

/** W4 at one size: the first page (median of a burst) and the whole list, paged through. */
function w4(sessions) {
  return {
    id: `W4 ${sessions / 1000}k`,
    title: `list of ${sessions.toLocaleString('en')} sessions`,
    metrics: { firstPage: `ms for the first page of ${SIZES.w4Page}`, wholeList: 'ms for the whole list' },
    needs: 'seedList',
    async setup(subject, dir) {
      const t = now();
      const handle = await subject.seedList(dir, sessions);
      const seedMs = now() - t;
      // Untimed first list: a new tidemark jsonl instance reads its whole catalog on its first
      // list (seconds at 100,000), and what is compared is a store that is already open.
      await handle.firstPage(SIZES.w4Page);
      return { handle, seedMs };
    },
    async round({ handle }) {
      // A burst of first pages, its median kept (one call alone often meets a GC pause), cut short
      // after a second: a peer whose first page reads every file would take minutes otherwise.
      const burst = [];
      const started = now();
      for (let i = 0; i < SIZES.w4Burst && (i === 0 || now() - started < 1000); i++) {
        const t = now();
        const got = await handle.firstPage(SIZES.w4Page);
        burst.push(now() - t);
        if (got !== Math.min(SIZES.w4Page, sessions)) throw new Error(`first page had ${got} sessions`);
      }
      const t = now();
      const seen = await handle.wholeList();
      const wholeList = now() - t;
      if (seen !== sessions) throw new Error(`the whole list had ${seen} of ${sessions} sessions`);
      return { firstPage: median(burst), wholeList };
    },
    async teardown(state) {
      await state.handle.close();
      return { seedMs: Math.round(state.seedMs) };
    },
  };
}

const w5 = {
  id: 'W5',
  title: `${SIZES.w5Sessions} sessions appending at once (${SIZES.w5Appends} durable 1-event appends each)`,
  metrics: { append: 'ms of wall time per append' },
  setup: (subject, dir) => withSessions(subject, dir, 'w5-', SIZES.w5Sessions),
  async round(state) {
    const ms = await timed(async () => {
      // Settled, not Promise.all: after one failure the other sessions must not go on writing
      // into a directory the teardown is about to remove.
      const settled = await Promise.allSettled(
        state.ids.map(async (id) => {
          for (let i = 0; i < SIZES.w5Appends; i++) await appendNext(state, id, 1, false);
        }),
      );
      const failed = settled.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
    });
    return { append: ms / (SIZES.w5Sessions * SIZES.w5Appends) };
  },
  teardown: closeHandle,
};

export const WORKLOADS = [w1, w2, w3, ...SIZES.w4Sizes.map(w4), w5];
