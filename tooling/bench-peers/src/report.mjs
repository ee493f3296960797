// The suite's output: a table and the issue's goals on stdout, and docs/bench/peers.json (every
// round), peers.md (the table README.md quotes) and peers.svg (the ratios as bars).
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { svgChart } from './chart.mjs';

const GOAL = 2;
const out = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'docs', 'bench');

// Why a goal can miss, by what the two sides do; printed beside a missed goal, with the numbers.
const WHY = {
  flush:
    'both sides wait for the same one flush per append (fsync of the WAL at synchronous=FULL, or fdatasync of the log): the disk, not the store, sets the pace, and no store is 2x faster than one flush',
  floor:
    'the peer does the least a read can (one SELECT or one readFile, then JSON.parse of the same rows); tidemark does that plus its checks (checksums, the torn-tail scan)',
  list: 'both read a summary index (an SQLite index or the catalog) without touching the logs',
};

function whyNot(row) {
  if (row.workload === 'W1' || row.workload === 'W2') return WHY.flush;
  if (row.workload === 'W3') return WHY.floor;
  if (row.workload.startsWith('W4')) return WHY.list;
  return 'see the numbers: no reason is known in advance';
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

const fmt = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3));

function markdown(rows, meta) {
  const lines = [
    `Peers suite, ${meta.rounds} interleaved rounds, medians (ms per operation; speed-up = peer / tidemark, median of per-round ratios; goal >= ${GOAL}x). ${meta.when}, Node ${meta.node}, ${meta.cpus} CPUs shared with other jobs, suite ${meta.seconds} s.`,
    '',
    '| workload | measure | peer | tidemark | peer ms | tidemark ms | speed-up | peer settings | tidemark settings |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    if (r.skipped) {
      lines.push(
        `| ${r.workload} | ${r.metric} | ${r.peer} | ${r.against} | – | – | not run: ${r.skipped} | | |`,
      );
      continue;
    }
    const note = r.note ? ` (${r.note})` : '';
    lines.push(
      `| ${r.workload} | ${r.metric} | ${r.peer}${note} | ${r.against} | ${fmt(r.peerMs)} | ${fmt(r.tidemarkMs)} | **${r.ratio.toFixed(2)}x** | ${r.peerSettings} | ${r.tidemarkSettings} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

function printTable(rows) {
  console.table(
    rows.map((r) => ({
      workload: `${r.workload} ${r.metric}`,
      peer: r.peer,
      'peer ms': r.skipped ? '–' : fmt(r.peerMs),
      'tidemark ms': r.skipped ? '–' : fmt(r.tidemarkMs),
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
  console.log(`Issue 14 goals: tidemark >= ${GOAL}x faster than each peer at equal durability`);
  for (const g of judged) {
    const verdict = g.holds === null ? 'NOT RUN' : g.holds ? 'HOLDS' : 'DOES NOT HOLD';
    console.log(`  ${verdict.padEnd(13)} ${g.goal}${g.ratio ? ` (${g.ratio})` : ''}`);
    if (g.why && g.holds !== null) console.log(`                why: ${g.why}`);
    else if (g.why) console.log(`                ${g.why}`);
  }
  mkdirSync(out, { recursive: true });
  const json = { ...meta, sizes, settings, goals: judged, ratios: rows, workloads };
  writeFileSync(join(out, 'peers.json'), `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(join(out, 'peers.md'), markdown(rows, meta));
  writeFileSync(
    join(out, 'peers.svg'),
    svgChart(rows, {
      goal: GOAL,
      title: `tidemark speed-up over each peer (${meta.when.slice(0, 10)}, medians of ${meta.rounds} rounds)`,
    }),
  );
  console.log(`Suite took ${seconds} s; wrote ${join(out, 'peers.json')}, peers.md and peers.svg`);
}
