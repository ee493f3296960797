// Workloads at scale (issue 14), run by bench.mjs or alone (`node bench/scale.mjs`):
//   W4  list: the first page and the whole list at 1,000 / 5,000 / 100,000 sessions
//   W5  64 sessions appending at once vs raw concurrent write + fdatasync over the same 64 files
// Rounds are interleaved (every size, or raw and store, in each round) and ratios of medians
// decide; absolute times only inform. BENCH_JSONL_DIST points at another build of the store (to
// measure an older version with the same workloads).
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareBatch } from '@tidemark/core';

const dist = process.env.BENCH_JSONL_DIST ?? '../dist/index.js';
const { bucketOf, encodeBatch, encodeHeader, encodeSidecar, openJsonlStore, sessionPaths } = await import(
  dist
);

const env = (name, fallback) => Number(process.env[name] ?? fallback);
export const SCALE = {
  rounds: Math.max(5, env('BENCH_ROUNDS', 5)),
  listSizes: (process.env.BENCH_LIST_SIZES ?? '1000,5000,100000').split(',').map(Number),
  pageSize: env('BENCH_PAGE', 50),
  burst: env('BENCH_PAGE_BURST', 7),
  writers: env('BENCH_W5_SESSIONS', 64),
  w5Appends: env('BENCH_W5_APPENDS', 40),
};
const T = '2026-01-01T00:00:00.000Z';
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => performance.now();
const ms = (x) => `${x.toFixed(1)} ms`;

function event(seq) {
  return {
    seq,
    type: seq % 2 === 1 ? 'turn/end' : 'note',
    time: T,
    data: { text: `event ${seq}`.padEnd(120, 'x') },
  };
}

/**
 * `sessions` two-event sessions over 20 cwds, written directly in the store's format (log and
 * sidecar). Above BENCH_SEED_CATALOG_ABOVE sessions the list catalog is written too, as a store
 * at rest has it (a store without one rebuilds it from the sidecars on the first list, which at
 * 100,000 sessions on a shared disk takes minutes; the smaller sizes measure that rebuild).
 */
function populate(root, sessions) {
  const batch = encodeBatch(prepareBatch([event(0), event(1)]), 1, T);
  const made = new Set();
  const seed = sessions > env('BENCH_SEED_CATALOG_ABOVE', 5000);
  const catalog = seed
    ? [JSON.stringify({ format: 'tidemark-catalog', version: 1, token: `bench${sessions}` })]
    : [];
  for (let i = 0; i < sessions; i++) {
    const id = `s-${String(i).padStart(6, '0')}`;
    const cwd = `/project/${i % 20}`;
    const paths = sessionPaths(root, bucketOf(cwd), id);
    if (!made.has(paths.dir)) {
      mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
      made.add(paths.dir);
    }
    const log = Buffer.from(encodeHeader({ id, createdAt: T, cwd }, {}) + batch);
    writeFileSync(paths.log, log, { mode: 0o600 });
    const updatedAt = new Date(Date.parse(T) + i * 1000).toISOString();
    const summary = { id, createdAt: T, updatedAt, cwd, eventCount: 2, committedSeq: 1, interrupted: false };
    const sidecar = encodeSidecar({ logSize: log.length, summary });
    writeFileSync(paths.summary, sidecar, { mode: 0o600 });
    if (seed) {
      const st = statSync(paths.summary);
      const stamp = JSON.stringify(`${st.size}:${st.mtimeMs}`);
      catalog.push(`\n{"t":"s","b":${JSON.stringify(paths.bucket)},"c":${stamp},"sc":${sidecar.trimEnd()}}`);
    }
  }
  if (seed) writeFileSync(join(root, '.catalog.jsonl'), catalog.join(''), { mode: 0o600 });
}

/** readdir of every bucket and lstat of every log: the floor of any list that looks at each session. */
async function rawReaddirStat(root) {
  let n = 0;
  for (const bucket of await readdir(root)) {
    if (bucket.startsWith('.')) continue;
    const names = await readdir(join(root, bucket));
    await Promise.all(names.filter((x) => x.endsWith('.jsonl')).map((x) => stat(join(root, bucket, x))));
    n += names.length;
  }
  return n;
}

async function wholeList(store, expected) {
  let seen = 0;
  let cursor;
  do {
    const page = await store.list({ limit: 1000, ...(cursor && { cursor }) });
    if (page.problems.length > 0) throw new Error(`list problems: ${page.problems[0].error.message}`);
    seen += page.sessions.length;
    cursor = page.nextCursor;
  } while (cursor);
  if (seen !== expected) throw new Error(`list saw ${seen} of ${expected} sessions`);
}

/** W4: per size, a warm first page, a first page from a new instance, the whole list, raw readdir+stat. */
export async function benchW4(work) {
  const sizes = SCALE.listSizes;
  const roots = sizes.map((n) => join(work, `w4-${n}`));
  const stores = [];
  for (const [i, n] of sizes.entries()) {
    let t = now();
    populate(roots[i], n);
    const made = now() - t;
    const store = await openJsonlStore({ root: roots[i] });
    t = now();
    await wholeList(store, n); // builds the catalog (or reads every sidecar, without one)
    process.stderr.write(`W4 ${n}: generated in ${ms(made)}, first list ever ${ms(now() - t)}\n`);
    stores.push(store);
  }
  // Past the window in which a just-changed directory is not trusted: what a store at rest sees.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const samples = sizes.map(() => ({ first: [], cold: [], whole: [], raw: [] }));
  for (let round = 0; round < SCALE.rounds; round++) {
    for (const [i, n] of sizes.entries()) {
      const s = samples[i];
      // A burst of first pages, its median kept: one call alone often meets a GC pause left by
      // the previous (large) size, which says nothing about this one.
      const burst = [];
      for (let k = 0; k < SCALE.burst; k++) {
        const t0 = now();
        const page = await stores[i].list({ limit: SCALE.pageSize });
        burst.push(now() - t0);
        if (page.sessions.length !== Math.min(SCALE.pageSize, n)) throw new Error('short first page');
      }
      s.first.push(median(burst));
      let t = now();
      const fresh = await openJsonlStore({ root: roots[i] });
      await fresh.list({ limit: SCALE.pageSize });
      s.cold.push(now() - t);
      await fresh.close();
      t = now();
      await wholeList(stores[i], n);
      s.whole.push(now() - t);
      t = now();
      await rawReaddirStat(roots[i]);
      s.raw.push(now() - t);
    }
    const line = sizes.map(
      (n, i) => `${n}: page ${ms(samples[i].first.at(-1))}, whole ${ms(samples[i].whole.at(-1))}`,
    );
    process.stderr.write(`W4 round ${round}: ${line.join('; ')}\n`);
  }
  for (const store of stores) await store.close();
  const med = samples.map((s) => ({
    firstPageMs: median(s.first),
    newInstanceFirstPageMs: median(s.cold),
    wholeListMs: median(s.whole),
    rawReaddirStatMs: median(s.raw),
  }));
  const detail = Object.fromEntries(sizes.map((n, i) => [n, med[i]]));
  const results = [];
  const small = 0;
  for (let i = 1; i < sizes.length; i++) {
    const ratio = med[i].firstPageMs / med[small].firstPageMs;
    results.push({
      name: `W4 first page (${SCALE.pageSize}) at ${sizes[i]} sessions vs at ${sizes[small]}`,
      ratio,
      goal: '<= 1.5 (time ratio)',
      pass: ratio <= 1.5,
      detail,
    });
    results.push({
      name: `W4 first page from a new store instance at ${sizes[i]} vs at ${sizes[small]} (reported)`,
      ratio: med[i].newInstanceFirstPageMs / med[small].newInstanceFirstPageMs,
      goal: '- (reported, not judged)',
      pass: true,
    });
    results.push({
      name: `W4 whole list per session at ${sizes[i]} vs at ${sizes[small]} (reported)`,
      ratio: med[i].wholeListMs / sizes[i] / (med[small].wholeListMs / sizes[small]),
      goal: '- (reported, not judged)',
      pass: true,
    });
  }
  for (const [i, n] of sizes.entries()) {
    results.push({
      name: `W4 first page at ${n} vs raw readdir+stat of every log (reported)`,
      ratio: med[i].firstPageMs / med[i].rawReaddirStatMs,
      goal: '- (reported, not judged)',
      pass: true,
    });
  }
  return results;
}

/** W5: `writers` sessions each appending one durable event at a time, all at once, vs raw. */
export async function benchW5(work) {
  const dir = join(work, 'w5');
  mkdirSync(dir);
  const n = SCALE.writers;
  const count = SCALE.w5Appends;
  const store = await openJsonlStore({ root: join(dir, 'store'), maxOpenWriters: n });
  const ids = Array.from({ length: n }, (_, i) => `w${i}`);
  const next = new Map();
  for (const id of ids) {
    await store.create({ id });
    await store.append(id, [event(0)]);
    next.set(id, 1);
  }
  const sample = Buffer.from(encodeBatch(prepareBatch([event(1)]), 1, T));
  const raws = await Promise.all(ids.map((id) => open(join(dir, `raw-${id}`), 'a', 0o600)));
  const rawRound = async () => {
    const t = now();
    await Promise.all(
      raws.map(async (h) => {
        for (let i = 0; i < count; i++) {
          await h.write(sample, 0, sample.length, null);
          await h.datasync();
        }
      }),
    );
    return now() - t;
  };
  const storeRound = async () => {
    const t = now();
    await Promise.all(
      ids.map(async (id) => {
        for (let i = 0; i < count; i++) {
          const seq = next.get(id);
          await store.append(id, [event(seq)]);
          next.set(id, seq + 1);
        }
      }),
    );
    return now() - t;
  };
  await rawRound();
  await storeRound();
  const ratios = [];
  const times = [];
  for (let round = 0; round < SCALE.rounds; round++) {
    const raw = await rawRound();
    const ours = await storeRound();
    ratios.push(raw / ours);
    times.push({ rawMs: raw, storeMs: ours });
    process.stderr.write(
      `W5 round ${round}: raw ${ms(raw)}, store ${ms(ours)} (${(raw / ours).toFixed(2)})\n`,
    );
  }
  for (const h of raws) await h.close();
  await store.close();
  return [
    {
      name: `W5 ${n} sessions x ${count} durable 1-event appends at once vs raw concurrent write+fdatasync`,
      ratio: median(ratios),
      goal: '>= 0.8 (throughput ratio)',
      pass: median(ratios) >= 0.8,
      detail: { perRound: ratios, times },
    },
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'tidemark-scale-'));
  try {
    const only = process.env.BENCH_ONLY ?? 'W4,W5';
    const results = [];
    if (only.includes('W5')) results.push(...(await benchW5(work)));
    if (only.includes('W4')) results.push(...(await benchW4(work)));
    for (const r of results)
      console.log(
        `${r.pass ? 'PASS' : 'FAIL'}  ${r.ratio.toFixed(2).padStart(6)}  ${r.goal.padEnd(26)}  ${r.name}`,
      );
    console.log(JSON.stringify(results.filter((r) => r.detail).map((r) => r.detail)));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
