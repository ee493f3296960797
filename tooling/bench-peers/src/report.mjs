// The suite's output: a table and the issue's goals on stdout, and docs/bench/peers.json (every
// round), peers.md (the table README.md quotes) and peers.svg (the ratios as bars).
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { svgChart } from './chart.mjs';

const GOAL = 2;
const out = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'docs', 'bench');

// Why a goal misses, by what the two sides do; printed beside a missed goal, with the numbers.
const FLUSH =
  'each append is one commit with one flush on both sides (a WAL sync at synchronous=FULL, or one fdatasync) and the flush is most of an append, so no store is 2x faster than a peer that does little else; below 1x is what tidemark does on top per append (sequence and validation checks, checksum, summary) on a shared CPU';
const WHY = {
  'W1 hand-written better-sqlite3': FLUSH,
  'W1 hand-written JSONL': FLUSH,
  'W1 LangGraph SqliteSaver': FLUSH,
  'W2 hand-written better-sqlite3': FLUSH,
  'W2 hand-written JSONL': FLUSH,
  'W2 LangGraph SqliteSaver': FLUSH,
  'W3 hand-written better-sqlite3':
    'the peer does the least a load can (one SELECT, JSON.parse of each row); tidemark does that and checks every checksum and the boundary state',
  'W3 hand-written JSONL':
    'the peer does the least a load can (readFile, split, JSON.parse); tidemark scans the same bytes and checks every batch checksum and the torn-tail rules',
  'W3 size hand-written better-sqlite3':
    'the same rows in the same kind of table; tidemark adds a checksum column per event',
  'W3 size hand-written JSONL':
    'the peer writes bare JSON lines; tidemark frames each batch with its checksum and the log starts with a header',
  'W3 size LangGraph SqliteSaver':
    "SqliteSaver keeps each write with its thread, checkpoint and task ids and a type column; the same order of size as tidemark's rows",
  'W3 size Emmett SQLite event store':
    'Emmett keeps more per message (stream, position, partition, kind, metadata, schema version, type, message id, global position, created) and a unique index over four columns',
  'W4 hand-written better-sqlite3':
    'the peer is one indexed SELECT per page, the floor of a keyset list; tidemark runs the same kind of query and decodes cursors and summaries on top',
  'W4 hand-written JSONL':
    "the first page is an index read against the peer's stat of every file; the whole list must produce every summary, and tidemark pages its catalog 1,000 at a time (listAll's default), each page costing more than the peer's stat of a thousand files",
  'W5 hand-written JSONL':
    'one file per session on both sides, so there is nothing to group: both flush the 64 files independently, and the bare write + fdatasync is the floor',
};

function whyNot(row) {
  return (
    WHY[`${row.workload} ${row.peer}`] ??
    WHY[`${row.workload.split(' ')[0]} ${row.peer}`] ??
    'no structural reason is known: see the per-round numbers in docs/bench/peers.json'
  );
}

/** The issue's goals: per peer and workload, tidemark >= 2x faster on every metric, or why not. */
function goals(rows) {
  const byKey = new Map();
  for (const row of rows) {
    const key = `${row.workload} vs ${row.peer}`;
    if (!byKey.has(key)) byKey.set(key, []);
    byKey.get(key).push(row);
  }
  return [...byKey].map(([key, group]) => {
    const skipped = group.find((r) => r.skipped);
    if (skipped) return { goal: key, holds: null, why: `not run: ${skipped.skipped}` };
    const worst = group.reduce((a, b) => (a.ratio < b.ratio ? a : b));
    const holds = worst.ratio >= GOAL;
    const ratio = group.map((r) => `${r.metric} ${r.ratio.toFixed(2)}x`).join(', ');
    return { goal: key, holds, ratio, why: holds ? undefined : whyNot(worst) };
  });
}

const fmtMs = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3));
/** A row's two values: milliseconds, or for W3's size row megabytes. */
const fmt = (value, row) => (row?.unit === 'bytes' ? `${(value / 1e6).toFixed(2)} MB` : fmtMs(value));

function markdown(rows, meta, settings) {
  const lines = [
    `${meta.rounds} interleaved rounds, medians in ms per operation (W3 size: bytes on disk); speed-up = peer time / tidemark time (median of the per-round ratios; > 1: tidemark is faster; goal >= ${GOAL}x). ${meta.when.slice(0, 16).replace('T', ' ')} UTC, Node ${meta.node}, ${meta.cpus} CPUs shared with other jobs; the suite took ${meta.seconds} s.`,
    '',
    '| workload | measure | peer | compared with | peer | tidemark | speed-up (or size ratio) |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    if (r.skipped) {
      lines.push(
        `| ${r.workload} | ${r.metric} | ${r.peer} | ${r.against} | – | – | not run: ${r.skipped} |`,
      );
      continue;
    }
    const note = r.note ? ` (${r.note})` : '';
    lines.push(
      `| ${r.workload} | ${r.metric} | ${r.peer}${note} | ${r.against} | ${fmt(r.peerMs, r)} | ${fmt(r.tidemarkMs, r)} | **${r.ratio.toFixed(2)}x** |`,
    );
  }
  lines.push('', 'Durability, read back from each database where it has one:', '');
  for (const [name, value] of Object.entries(settings)) lines.push(`- ${name}: ${value}`);
  return `${lines.join('\n')}\n`;
}

function printTable(rows) {
  console.table(
    rows.map((r) => ({
      workload: `${r.workload} ${r.metric}`,
      peer: r.peer,
      'peer ms': r.skipped ? '–' : fmt(r.peerMs, r),
      'tidemark ms': r.skipped ? '–' : fmt(r.tidemarkMs, r),
      'speed-up': r.skipped ? `not run` : `${r.ratio.toFixed(2)}x`,
    })),
  );
}

function printSettings(workloads) {
  const settings = new Map();
  for (const { results } of Object.values(workloads))
    for (const [name, r] of Object.entries(results)) if (r.settings) settings.set(name, r.settings);
  console.log('Durability of each subject (read back from the database where it has one):');
  for (const [name, s] of settings) console.log(`  ${name}: ${s}`);
  return Object.fromEntries(settings);
}

export function writeReport({ sizes, dirs, workloads, rows, seconds }) {
  const meta = {
    when: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    rounds: sizes.rounds,
    seconds,
    dirs,
  };
  printTable(rows);
  const settings = printSettings(workloads);
  const judged = goals(rows);
  console.log(
    `Issue 14 goals: tidemark >= ${GOAL}x faster (W3 size: smaller) than each peer at equal durability`,
  );
  for (const g of judged) {
    const verdict = g.holds === null ? 'NOT RUN' : g.holds ? 'HOLDS' : 'DOES NOT HOLD';
    console.log(`  ${verdict.padEnd(13)} ${g.goal}${g.ratio ? ` (${g.ratio})` : ''}`);
    if (g.why && g.holds !== null) console.log(`                why: ${g.why}`);
    else if (g.why) console.log(`                ${g.why}`);
  }
  mkdirSync(out, { recursive: true });
  const json = { ...meta, sizes, settings, goals: judged, ratios: rows, workloads };
  writeFileSync(join(out, 'peers.json'), `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(join(out, 'peers.md'), markdown(rows, meta, settings));
  writeFileSync(
    join(out, 'peers.svg'),
    svgChart(rows, {
      goal: GOAL,
      title: `tidemark speed-up over each peer (${meta.when.slice(0, 10)}, medians of ${meta.rounds} rounds)`,
    }),
  );
  console.log(`Suite took ${seconds} s; wrote ${join(out, 'peers.json')}, peers.md and peers.svg`);
}
