// A horizontal bar chart of the speed-ups as plain SVG text: one bar per workload measure and
// peer, on a log scale (a 0.5x and a 2x are the same distance from 1x), with the 1x and goal lines.

const xml = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const LEFT = 430;
const RIGHT = 950;
const TOP = 56;
const ROW = 22;

function colour(ratio, goal) {
  if (ratio >= goal) return '#2e7d32';
  if (ratio >= 1) return '#f9a825';
  return '#c62828';
}

/** The log-scale axis: domain from the data, at least 0.1x to 10x, in whole decades. */
function axis(rows) {
  const values = rows.filter((r) => r.ratio !== undefined).map((r) => r.ratio);
  const lo = Math.min(-1, Math.floor(Math.log10(Math.min(...values, 1))));
  const hi = Math.max(1, Math.ceil(Math.log10(Math.max(...values, 1))));
  const x = (ratio) => LEFT + ((Math.log10(ratio) - lo) / (hi - lo)) * (RIGHT - LEFT);
  const ticks = [];
  for (let d = lo; d <= hi; d++)
    for (const m of [1, 2, 5]) if (d + Math.log10(m) <= hi) ticks.push(m * 10 ** d);
  return { x, ticks };
}

function gridLines({ x, ticks }, bottom, goal) {
  const parts = [];
  for (const t of ticks) {
    const at = x(t).toFixed(1);
    const strong = t === 1 || t === goal;
    parts.push(
      `<line x1="${at}" y1="${TOP - 6}" x2="${at}" y2="${bottom}" stroke="${strong ? '#555' : '#ddd'}" stroke-width="${strong ? 1.5 : 1}"${t === goal ? ' stroke-dasharray="4 3"' : ''}/>`,
      `<text x="${at}" y="${bottom + 14}" text-anchor="middle" font-size="11">${Number(t.toPrecision(2))}x</text>`,
    );
  }
  return parts;
}

function bar(row, i, { x }, goal) {
  const y = TOP + i * ROW;
  const label = `${row.workload} ${row.metric}: ${row.peer} / ${row.against}`;
  const parts = [`<text x="${LEFT - 8}" y="${y + 14}" text-anchor="end" font-size="12">${xml(label)}</text>`];
  if (row.ratio === undefined) {
    parts.push(`<text x="${x(1) + 6}" y="${y + 14}" font-size="11" fill="#888">not run</text>`);
    return parts;
  }
  const a = x(Math.min(1, row.ratio));
  const b = x(Math.max(1, row.ratio));
  const fill = colour(row.ratio, goal);
  parts.push(
    `<rect x="${a.toFixed(1)}" y="${y + 3}" width="${Math.max(1, b - a).toFixed(1)}" height="${ROW - 6}" fill="${fill}"><title>${xml(`${label}: ${row.ratio.toFixed(2)}x`)}</title></rect>`,
    `<text x="${(b + 4).toFixed(1)}" y="${y + 14}" font-size="11">${row.ratio.toFixed(2)}x</text>`,
  );
  return parts;
}

/** The whole chart of the rows that ran; those that did not are named in one line below it. */
export function svgChart(all, { goal, title }) {
  const rows = all.filter((r) => r.ratio !== undefined);
  const notRun = [...new Set(all.filter((r) => r.ratio === undefined).map((r) => `${r.workload} ${r.peer}`))];
  const height = TOP + rows.length * ROW + 40 + (notRun.length > 0 ? 20 : 0);
  const scale = axis(rows);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${RIGHT + 60}" height="${height}" viewBox="0 0 ${RIGHT + 60} ${height}" font-family="sans-serif" role="img">`,
    `<title>${xml(title)}</title>`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="16" y="22" font-size="15" font-weight="bold">${xml(title)}</text>`,
    `<text x="16" y="40" font-size="11" fill="#555">peer / tidemark, in time (W3 size: in bytes), log scale; right of 1x tidemark is faster or smaller; dashed: the ${goal}x goal; green meets it, amber falls short, red is slower or larger</text>`,
    ...gridLines(scale, TOP + rows.length * ROW + 10, goal),
    ...rows.flatMap((row, i) => bar(row, i, scale, goal)),
    notRun.length > 0
      ? `<text x="16" y="${height - 4}" font-size="11" fill="#555">not run (no such API or a crash; see peers.md): ${xml(notRun.join(', '))}</text>`
      : '',
    '</svg>',
  ];
  return `${parts.join('\n')}\n`;
}
