// `harness-report.html`: the report as one self-contained page for people and CI artifacts. The
// fault-class × backend matrix is a heat map; each cell links to its runs (fault, workload step,
// the call and the typed error it got, violations, and how to replay one). Inline CSS and a few
// lines of inline JS, no network; every string from the report is escaped.
import { replayCommand, rerunCommand } from './replay-command.js';
import type { HarnessReport, ReportCell, Reproduction, RunRecord } from './report.js';

/** What the rendering of runs needs of the report. */
type ReplayContext = Pick<HarnessReport, 'quick' | 'selectors'>;

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** `text` safe inside HTML text and quoted attribute values. Pure. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

const STYLE = `
:root{--pass:#1f8a4c;--pass-bg:#d9f2e3;--na:#9a6700;--na-bg:#fff1c2;--fail:#b42318;--fail-bg:#fde0dc;--none:#f3f4f6;--ink:#1d2330;--mute:#5b6475;--line:#d7dbe3}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);margin:0;padding:24px 32px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}h3{font-size:15px;margin:0 0 6px}
.verdict{display:inline-block;font-weight:700;padding:2px 10px;border-radius:4px;margin-right:8px}
.verdict.pass{background:var(--pass-bg);color:var(--pass)}.verdict.fail{background:var(--fail-bg);color:var(--fail)}
.meta{color:var(--mute)}table{border-collapse:collapse}
.matrix th,.matrix td{border:1px solid var(--line);padding:0}.matrix th{background:#f7f8fa;padding:6px 10px;text-align:left;font-weight:600}
.matrix thead th{text-align:center;min-width:110px}
.matrix td{height:52px}.cell{display:flex;flex-direction:column;justify-content:center;height:100%;min-width:110px;padding:8px 10px;text-align:center;text-decoration:none;font-weight:600;color:inherit}
.cell.pass{background:var(--pass-bg);color:var(--pass)}.cell.na{background:var(--na-bg);color:var(--na)}
.cell.fail{background:var(--fail-bg);color:var(--fail)}.cell.none{background:var(--none);color:var(--mute);font-weight:400}
.cell:hover,.cell:focus,.cell.selected{outline:3px solid var(--ink);outline-offset:-3px}
.cell small{display:block;font-weight:400;opacity:.85}
.legend span{display:inline-block;min-width:0;padding:2px 8px;border-radius:3px;margin-right:6px}
.board{display:flex;gap:24px;align-items:flex-start;flex-wrap:wrap}.board>.panel{flex:1 1 520px;min-width:0;position:sticky;top:12px;max-height:calc(100vh - 24px);overflow:auto}
.hint{border:1px dashed var(--line);border-radius:6px;padding:14px 16px;color:var(--mute)}body:not(.js) .details:target~.hint,.details.open~.hint{display:none}
.details{display:none;border:1px solid var(--line);border-radius:6px;padding:14px 16px}
body:not(.js) .details:target,.details.open{display:block}
.details .counts{color:var(--mute);margin-bottom:8px}
.runs{width:100%;table-layout:fixed}.runs col.fault{width:28%}.runs col.step{width:16%}.runs col.call{width:22%}.runs td{overflow-wrap:anywhere}.runs th,.runs td{border-top:1px solid var(--line);padding:6px 8px;text-align:left;vertical-align:top}
.runs th{background:#f7f8fa;font-weight:600}.runs tbody.violating td:first-child{border-left:4px solid var(--fail)}.runs tr.repro-row td{border-top:0}
.repro{background:#fff7f5;border:1px solid #f3c3bc;border-radius:4px;padding:6px 8px;margin-top:6px}
.repro{margin:0}.repro dt{font-weight:600;float:left;clear:left;width:100px}.repro dd{margin:0 0 2px 105px}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f1f3f6;padding:1px 4px;border-radius:3px;word-break:break-all}
.totals th,.totals td{border:1px solid var(--line);padding:4px 10px;text-align:right}.totals th:first-child,.totals td:first-child{text-align:left}
.error{color:var(--fail)}.muted{color:var(--mute)}
`;

const SCRIPT = `
(function(){
  document.body.classList.add('js');
  function show(id){
    document.querySelectorAll('.details.open').forEach(function(d){d.classList.remove('open')});
    document.querySelectorAll('.cell.selected').forEach(function(c){c.classList.remove('selected')});
    var d=document.getElementById(id); if(!d) return;
    d.classList.add('open');
    var c=document.querySelector('.cell[href="#'+id+'"]'); if(c) c.classList.add('selected');
  }
  document.querySelectorAll('a.cell[href^="#"]').forEach(function(a){
    a.addEventListener('click',function(e){
      var id=a.getAttribute('href').slice(1);
      e.preventDefault(); show(id); history.replaceState(null,'','#'+id);
    });
  });
  if(location.hash) show(location.hash.slice(1));
})();
`;

/** The id of a cell's details section. */
function cellId(index: number): string {
  return `cell-${index}`;
}

function statusClass(cell: ReportCell): string {
  return cell.status === 'n/a' ? 'na' : cell.status;
}

function cellLabel(cell: ReportCell): string {
  if (cell.status === 'n/a') return 'n/a';
  if (cell.status === 'pass') return `pass<small>${cell.runs} run(s)</small>`;
  return `${cell.violations} violation${cell.violations === 1 ? '' : 's'}<small>${cell.runs} run(s)</small>`;
}

/** Distinct values in first-seen order. */
function distinct(values: readonly string[]): string[] {
  return [...new Set(values)];
}

function renderMatrix(report: HarnessReport): string {
  const backends = distinct(report.cells.map((c) => c.backend));
  const classes = distinct(report.cells.map((c) => c.faultClass));
  const index = new Map(report.cells.map((c, i) => [`${c.backend}\0${c.faultClass}`, i]));
  const head = backends.map((b) => `<th scope="col">${escapeHtml(b)}</th>`).join('');
  const rows = classes.map((faultClass) => {
    const tds = backends.map((backend) => {
      const i = index.get(`${backend}\0${faultClass}`);
      if (i === undefined) return '<td><span class="cell none" title="not run">—</span></td>';
      const cell = report.cells[i]!;
      const title = `${cell.backend} / ${cell.faultClass}: ${cell.status}${cell.note ? ` (${cell.note})` : ''}`;
      return `<td><a class="cell ${statusClass(cell)}" href="#${cellId(i)}" title="${escapeHtml(title)}" data-backend="${escapeHtml(backend)}" data-fault-class="${escapeHtml(faultClass)}" data-status="${escapeHtml(cell.status)}">${cellLabel(cell)}</a></td>`;
    });
    return `<tr><th scope="row">${escapeHtml(faultClass)}</th>${tds.join('')}</tr>`;
  });
  return `<table class="matrix"><thead><tr><th>fault class</th>${head}</tr></thead><tbody>${rows.join('\n')}</tbody></table>`;
}

function renderReproduction(
  backend: string,
  reproduction: Reproduction | undefined,
  context: ReplayContext,
): string {
  const { quick, selectors } = context;
  const items: string[] = [];
  const seed =
    reproduction?.seed !== undefined
      ? String(reproduction.seed)
      : 'none: the run is deterministic (same workload, same fault)';
  items.push(`<dt>seed</dt><dd>${escapeHtml(seed)}</dd>`);
  if (reproduction?.operation !== undefined)
    items.push(`<dt>operation</dt><dd>${reproduction.operation}</dd>`);
  if (reproduction?.crashState !== undefined)
    items.push(`<dt>crash state</dt><dd><code>${escapeHtml(reproduction.crashState)}</code></dd>`);
  const command =
    reproduction?.replayId !== undefined
      ? replayCommand(backend, reproduction.replayId, quick, selectors)
      : rerunCommand(backend, quick, selectors);
  const note =
    reproduction?.replayId === undefined
      ? ' <span class="muted">(the whole run: this fault class has no single-run replay)</span>'
      : '';
  items.push(`<dt>replay</dt><dd><code class="replay">${escapeHtml(command)}</code>${note}</dd>`);
  return `<dl class="repro">${items.join('')}</dl>`;
}

function renderRun(backend: string, run: RunRecord, context: ReplayContext): string {
  const violating = run.violationCount > 0;
  const step = run.reproduction?.step ?? run.firstError?.step ?? run.violations[0]?.step;
  const error = run.firstError;
  const call =
    error === undefined
      ? '<span class="muted">no typed error</span>'
      : `<code>${escapeHtml(error.call)}</code> → <span class="error">${escapeHtml(error.code)}${error.errno ? ` (${escapeHtml(error.errno)})` : ''}</span><br><span class="muted">${escapeHtml(error.message)}</span>`;
  const violations = violating
    ? `<ul>${run.violations.map((v) => `<li><strong>${escapeHtml(v.kind)}</strong>: ${escapeHtml(v.detail)}</li>`).join('')}${run.violationCount > run.violations.length ? `<li class="muted">… ${run.violationCount - run.violations.length} more</li>` : ''}</ul>`
    : '<span class="muted">none</span>';
  const repro = violating
    ? `<tr class="repro-row"><td colspan="4">${renderReproduction(backend, run.reproduction, context)}</td></tr>`
    : '';
  return `<tbody class="run ${violating ? 'violating' : 'passing'}"><tr><td>${escapeHtml(run.fault)}${run.injected ? '' : ' <span class="muted">(not injected)</span>'}</td><td>${step === undefined ? '<span class="muted">—</span>' : escapeHtml(step)}</td><td>${call}</td><td>${violations}</td></tr>${repro}</tbody>`;
}

function renderCellDetails(cell: ReportCell, index: number, context: ReplayContext): string {
  const samples = cell.samples ?? [];
  // Violating runs first: they are what the reader opened the cell for.
  const ordered = [
    ...samples.filter((r) => r.violationCount > 0),
    ...samples.filter((r) => r.violationCount === 0),
  ];
  const failing = samples.length - ordered.filter((r) => r.violationCount === 0).length;
  const shown =
    samples.length === 0
      ? `<p class="muted">${cell.status === 'n/a' ? 'Not applicable to this backend.' : 'No run details recorded.'}</p>`
      : `<p class="muted">Showing ${failing} violating run(s) and ${samples.length - failing} passing run(s) of ${cell.runs}.</p>
<table class="runs"><colgroup><col class="fault"><col class="step"><col class="call"><col></colgroup><thead><tr><th>injected fault</th><th>workload step</th><th>call and typed error</th><th>violations</th></tr></thead>
${ordered.map((run) => renderRun(cell.backend, run, context)).join('\n')}</table>`;
  return `<section class="details" id="${cellId(index)}" data-backend="${escapeHtml(cell.backend)}" data-fault-class="${escapeHtml(cell.faultClass)}">
<h3>${escapeHtml(cell.backend)} / ${escapeHtml(cell.faultClass)}: <span class="cell-status">${escapeHtml(cell.status)}</span></h3>
${cell.note ? `<p>${escapeHtml(cell.note)}</p>` : ''}
<div class="counts">${cell.runs} run(s), ${cell.faultsInjected} with the fault injected, ${cell.errorsSurfaced} typed error(s), ${cell.absences} false absence(s), ${cell.lostEvents} lost event(s), ${cell.violations} violation(s)</div>
${shown}
</section>`;
}

function renderTotals(report: HarnessReport): string {
  const rows = report.totals.map(
    (t) =>
      `<tr><td>${escapeHtml(t.backend)}</td><td>${t.operationsSwept}</td><td>${t.runs}</td><td>${t.crashPoints}</td><td>${t.crashStates}</td><td>${t.kills}</td><td>${t.killAcks}</td><td>${(t.durationMs / 1000).toFixed(1)} s</td></tr>`,
  );
  return `<table class="totals"><thead><tr><th>backend</th><th>ops swept</th><th>runs</th><th>crash points</th><th>crash states</th><th>kills</th><th>kill acks</th><th>time</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/**
 * The report as one self-contained HTML page (`harness-report.html`): no network, inline CSS and
 * JS, every string escaped. Pure.
 */
export function formatReportHtml(report: HarnessReport): string {
  const verdict = report.passed ? 'PASS' : 'FAIL';
  const summary = `${report.failureCount} violation(s) in ${(report.durationMs / 1000).toFixed(1)} s, ${report.quick ? 'quick' : 'full'} run started ${report.startedAt}`;
  const details = report.cells.map((cell, i) => renderCellDetails(cell, i, report)).join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>tidemark fault harness: ${verdict}</title>
<style>${STYLE}</style></head>
<body>
<h1>tidemark fault harness report</h1>
<p><span class="verdict ${verdict.toLowerCase()}" id="verdict">${verdict}</span><span class="meta">${escapeHtml(summary)}</span></p>
<p class="legend"><span class="cell pass">pass</span><span class="cell na">n/a</span><span class="cell fail">violations</span><span class="cell none">not run</span></p>
<h2>Fault class × backend</h2>
<div class="board"><div>${renderMatrix(report)}</div>
<div class="panel">${details}
<p class="hint">Select a cell of the matrix to see its runs: the injected fault, the workload step, the call and the typed error it got, and for a violation the exact reproduction and the command that replays it.</p></div></div>
<h2>Totals</h2>
${renderTotals(report)}
<script>${SCRIPT}</script>
</body></html>
`;
}
