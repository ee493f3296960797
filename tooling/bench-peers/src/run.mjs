// The peers suite (issue 14): the same workloads against tidemark and against each peer in one
// run, rounds interleaved (the order of the subjects rotates every round, so none always runs
// first, on a cold cache, or right after another's garbage), judged on ratios of medians: the
// machine is shared, so absolute times only inform.
//
//   pnpm --filter @tidemark/bench-peers bench      (or the root `pnpm bench`)
//
// Sizes via the environment (see common.mjs); BENCH_ONLY=W1,W3 runs some workloads only.
// Writes docs/bench/peers.json, peers.svg and peers.md. Exit status 1 only when a workload
// crashed; the goals are printed and judged by people.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, SIZES } from './common.mjs';
import { writeReport } from './report.mjs';
import { handJsonl, tidemarkJsonl } from './subjects-jsonl.mjs';
import { emmett, sqliteSaver } from './subjects-peers.mjs';
import { handSqlite, tidemarkSqlite } from './subjects-sqlite.mjs';
import { WORKLOADS } from './workloads.mjs';

// BENCH_SUBJECTS='tidemark jsonl,hand-written JSONL' runs some subjects only (a peer needs the
// tidemark store it is compared with).
const PICKED = process.env.BENCH_SUBJECTS?.split(',');
const SUBJECTS = [tidemarkSqlite, tidemarkJsonl, handSqlite, handJsonl, sqliteSaver, emmett].filter(
  (subject) => PICKED === undefined || PICKED.includes(subject.name),
);
const ONLY = process.env.BENCH_ONLY?.split(',');
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'tidemark-peers-'));
// W4 lists trees seeded with up to 300,000 files and measures warm lists, which read the page
// cache on any file system; on a shared disk just writing and deleting those files took minutes
// (more than the whole rest of the suite), so they go to tmpfs unless BENCH_W4_DIR says otherwise.
const memory = existsSync('/dev/shm') ? '/dev/shm' : undefined;
const listWork = mkdtempSync(join(process.env.BENCH_W4_DIR ?? memory ?? work, 'tidemark-peers-w4-'));
const log = (line) => process.stderr.write(`${line}\n`);

/** Why `subject` does not run `workload`, or undefined when it does. */
function lacking(subject, workload) {
  if (subject.lacks?.[workload.id.split(' ')[0]]) return subject.lacks[workload.id.split(' ')[0]];
  if (workload.needs && subject[workload.needs] === undefined) return `no ${workload.needs}`;
  return undefined;
}

/** Sets up every subject that can run `workload`; a crash is recorded on the subject's entry. */
async function setUp(workload, entries) {
  for (const entry of entries) {
    const base = workload.needs === 'seedList' ? listWork : work;
    entry.dir = join(base, `${workload.id}-${entry.subject.name}`.replace(/\W+/g, '-'));
    mkdirSync(entry.dir, { recursive: true });
    try {
      entry.state = await workload.setup(entry.subject, entry.dir);
      entry.result.settings = entry.state.handle.settings ?? entry.subject.settings;
    } catch (error) {
      entry.result.error = `setup: ${error.stack ?? error}`;
    }
  }
}

/**
 * Rounds of `workload` over `entries`; values in ms per op. A round is `workload.slices` passes
 * over the subjects, the order rotating every pass, and each subject's value for the round is the
 * mean of its passes: short slices put every subject's appends within a second of the others',
 * where one long turn each let the shared disk's latency drift between them.
 */
async function rounds(workload, entries) {
  const slices = workload.slices ?? 1;
  for (let r = 0; r < SIZES.rounds; r++) {
    const sums = new Map(entries.map((entry) => [entry, {}]));
    for (let s = 0; s < slices; s++) {
      for (let i = 0; i < entries.length; i++) {
        const entry = entries[(i + r + s) % entries.length];
        if (entry.result.error) continue;
        try {
          const values = await workload.round(entry.state);
          const sum = sums.get(entry);
          for (const [metric, ms] of Object.entries(values)) sum[metric] = (sum[metric] ?? 0) + ms;
        } catch (error) {
          entry.result.error = `round ${r}: ${error.stack ?? error}`;
        }
      }
    }
    const line = [];
    for (const [entry, sum] of sums) {
      if (entry.result.error) continue;
      for (const [metric, ms] of Object.entries(sum)) entry.result.rounds[metric].push(ms / slices);
      const values = Object.values(sum).map((ms) => (ms / slices).toFixed(2));
      line.push(`${entry.subject.name} ${values.join('/')}`);
    }
    log(`${workload.id} round ${r}: ${line.join(', ')}`);
  }
}

async function tearDown(workload, entries) {
  for (const entry of entries) {
    try {
      const report = entry.state?.handle?.report?.();
      if (entry.state) Object.assign(entry.result, await workload.teardown(entry.state), report);
    } catch (error) {
      entry.result.error ??= `teardown: ${error.stack ?? error}`;
    }
    rmSync(entry.dir, { recursive: true, force: true });
  }
}

/** One workload over every subject: results keyed by subject name. */
async function runWorkload(workload) {
  const results = {};
  const entries = [];
  for (const subject of SUBJECTS) {
    const why = lacking(subject, workload);
    if (why) {
      results[subject.name] = { skipped: why };
      continue;
    }
    const rounds = Object.fromEntries(Object.keys(workload.metrics).map((m) => [m, []]));
    results[subject.name] = { rounds };
    if (workload.id === 'W5' && subject.serializedW5) results[subject.name].note = subject.serializedW5;
    entries.push({ subject, result: results[subject.name] });
  }
  await setUp(workload, entries);
  await rounds(workload, entries);
  await tearDown(workload, entries);
  for (const { result } of entries) {
    if (result.error) log(`${workload.id}: ${result.error}`);
    else result.median = Object.fromEntries(Object.entries(result.rounds).map(([m, xs]) => [m, median(xs)]));
  }
  return results;
}

/**
 * Speed-ups of tidemark over each peer: per metric, the median over rounds of the peer's time
 * over tidemark's in the same round (> 1: tidemark is faster).
 */
function ratios(workload, results) {
  const out = [];
  for (const peer of SUBJECTS.filter((s) => s.against)) {
    const p = results[peer.name];
    const t = results[peer.against];
    for (const metric of Object.keys(workload.metrics)) {
      const row = { workload: workload.id, metric, peer: peer.name, against: peer.against };
      if (p.skipped) row.skipped = p.skipped;
      else if (p.error || t.error) row.skipped = `crashed: ${(p.error ?? t.error).split('\n')[0]}`;
      else {
        const per = p.rounds[metric].map((ms, r) => ms / t.rounds[metric][r]);
        row.ratio = median(per);
        row.peerMs = p.median[metric];
        row.tidemarkMs = t.median[metric];
        row.peerSettings = p.settings;
        row.tidemarkSettings = t.settings;
        const notes = [p.note, p.retries && `${p.retries} calls retried after SQLITE_BUSY`];
        if (notes.some(Boolean)) row.note = notes.filter(Boolean).join('; ');
      }
      out.push(row);
    }
    if (workload.id === 'W3') out.push(sizeRow(peer, p, t));
  }
  return out;
}

/** W3's bytes on disk as a goal of its own: the issue asks for faster or smaller. */
function sizeRow(peer, p, t) {
  const row = { workload: 'W3 size', metric: 'bytes', unit: 'bytes', peer: peer.name, against: peer.against };
  if (p.bytesOnDisk === undefined || t.bytesOnDisk === undefined) return { ...row, skipped: 'not measured' };
  return {
    ...row,
    ratio: p.bytesOnDisk / t.bytesOnDisk,
    peerMs: p.bytesOnDisk,
    tidemarkMs: t.bytesOnDisk,
    peerSettings: p.settings,
    tidemarkSettings: t.settings,
  };
}

const started = Date.now();
const workloads = {};
const rows = [];
let crashed = false;
try {
  for (const workload of WORKLOADS) {
    if (ONLY && !ONLY.includes(workload.id.split(' ')[0])) continue;
    const t = Date.now();
    const results = await runWorkload(workload);
    workloads[workload.id] = { title: workload.title, metrics: workload.metrics, results };
    rows.push(...ratios(workload, results));
    crashed ||= Object.values(results).some((r) => r.error);
    log(`${workload.id} done in ${((Date.now() - t) / 1000).toFixed(0)} s`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
  rmSync(listWork, { recursive: true, force: true });
}
const dirs = { work, w4: listWork };
writeReport({ sizes: SIZES, dirs, workloads, rows, seconds: Math.round((Date.now() - started) / 1000) });
process.exitCode = crashed ? 1 : 0;
