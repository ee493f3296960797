import type { Violation } from './model.js';
import type { RunOutcome } from './runner.js';

/** One cell of the matrix: a fault class on one backend. */
export interface ReportCell {
  backend: string;
  faultClass: string;
  /** Workload runs or crash states checked. */
  runs: number;
  /** Runs in which a fault was really injected (a planned call happened). */
  faultsInjected: number;
  /** Calls that rejected with a typed TidemarkError. */
  errorsSurfaced: number;
  /** false-absence violations: must be 0. */
  absences: number;
  /** Acknowledged events missing after the fault was lifted: must be 0. */
  lostEvents: number;
  /** Every violation, absences and losses included. */
  violations: number;
  /** `n/a` when the backend cannot be put through this fault class. */
  status: 'pass' | 'fail' | 'n/a';
  /** Why a cell is `n/a`, or a note. */
  note?: string;
  /** The first few violations, for diagnosis. */
  examples: string[];
}

/** A violation with where it happened. */
export interface HarnessFailure extends Violation {
  backend: string;
  faultClass: string;
  /** The fault of the run: `EIO once at op 17 (datasync /s/x.jsonl)`, a crash state, a kill number. */
  fault: string;
}

/** Counters of one backend's run. */
export interface BackendTotals {
  backend: string;
  /** Storage operations (or engine steps) the workload performs, each swept. */
  operationsSwept: number;
  /** Workload runs under injected errors. */
  runs: number;
  /** Crash points times crash states reopened and checked. */
  crashStates: number;
  crashPoints: number;
  /** Child writers killed with SIGKILL. */
  kills: number;
  /** Batches acknowledged by killed children and checked after each kill. */
  killAcks: number;
  durationMs: number;
}

/** What {@link runFaultHarness} returns, and what `harness-report.json` holds. */
export interface HarnessReport {
  quick: boolean;
  startedAt: string;
  durationMs: number;
  cells: ReportCell[];
  totals: BackendTotals[];
  /** Every violation found (at most 500 listed; `failureCount` has the total). Empty means pass. */
  failures: HarnessFailure[];
  failureCount: number;
  /** True when no cell failed. */
  passed: boolean;
}

const MAX_EXAMPLES = 5;
const MAX_FAILURES = 500;

/** Accumulates outcomes into cells and failures. */
export class ReportBuilder {
  private readonly cells = new Map<string, ReportCell>();
  readonly failures: HarnessFailure[] = [];
  failureCount = 0;

  /** @param stopAfter - violations after which {@link ReportBuilder.enough} turns true. */
  constructor(private readonly stopAfter = Number.POSITIVE_INFINITY) {}

  /** True once enough violations were found for the sweeps to stop early. */
  get enough(): boolean {
    return this.failureCount >= this.stopAfter;
  }

  cell(backend: string, faultClass: string): ReportCell {
    const key = `${backend}\0${faultClass}`;
    let cell = this.cells.get(key);
    if (cell === undefined) {
      cell = {
        backend,
        faultClass,
        runs: 0,
        faultsInjected: 0,
        errorsSurfaced: 0,
        absences: 0,
        lostEvents: 0,
        violations: 0,
        status: 'pass',
        examples: [],
      };
      this.cells.set(key, cell);
    }
    return cell;
  }

  notApplicable(backend: string, faultClass: string, note: string): void {
    const cell = this.cell(backend, faultClass);
    cell.status = 'n/a';
    cell.note = note;
  }

  add(backend: string, faultClass: string, fault: string, outcome: RunOutcome, injected: boolean): void {
    const cell = this.cell(backend, faultClass);
    cell.runs++;
    if (injected) cell.faultsInjected++;
    cell.errorsSurfaced += outcome.errorsSurfaced;
    cell.absences += outcome.absences;
    cell.lostEvents += outcome.lostEvents;
    cell.violations += outcome.violations.length;
    if (outcome.violations.length > 0) cell.status = 'fail';
    for (const violation of outcome.violations) {
      if (cell.examples.length < MAX_EXAMPLES)
        cell.examples.push(`${fault}: ${violation.kind}: ${violation.detail}`);
      this.failureCount++;
      if (this.failures.length < MAX_FAILURES)
        this.failures.push({ ...violation, backend, faultClass, fault });
    }
  }

  build(quick: boolean, startedAt: Date, totals: BackendTotals[]): HarnessReport {
    const cells = [...this.cells.values()];
    return {
      quick,
      startedAt: startedAt.toISOString(),
      durationMs: Date.now() - startedAt.getTime(),
      cells,
      totals,
      failures: this.failures,
      failureCount: this.failureCount,
      passed: cells.every((cell) => cell.status !== 'fail'),
    };
  }
}

function table(headers: string[], rows: string[][]): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
}

const CELL_HEADERS = [
  'fault class',
  'backend',
  'runs',
  'injected',
  'errors',
  'absences',
  'lost',
  'violations',
  'result',
];

function cellRow(cell: ReportCell): string[] {
  const result =
    cell.status === 'n/a'
      ? `n/a${cell.note ? ` (${cell.note})` : ''}`
      : cell.status === 'pass'
        ? 'PASS'
        : 'FAIL';
  return [
    cell.faultClass,
    cell.backend,
    String(cell.runs),
    String(cell.faultsInjected),
    String(cell.errorsSurfaced),
    String(cell.absences),
    String(cell.lostEvents),
    String(cell.violations),
    result,
  ];
}

function totalsRows(report: HarnessReport): string[][] {
  return report.totals.map((t) => [
    t.backend,
    String(t.operationsSwept),
    String(t.runs),
    String(t.crashPoints),
    String(t.crashStates),
    String(t.kills),
    String(t.killAcks),
    `${(t.durationMs / 1000).toFixed(1)} s`,
  ]);
}
const TOTAL_HEADERS = [
  'backend',
  'ops swept',
  'runs',
  'crash points',
  'crash states',
  'kills',
  'kill acks',
  'time',
];

/** The matrix and totals as a plain-text table for a terminal. */
export function formatReportTable(report: HarnessReport): string {
  const lines = [
    ...table(CELL_HEADERS, report.cells.map(cellRow)),
    '',
    ...table(TOTAL_HEADERS, totalsRows(report)),
    '',
  ];
  lines.push(
    `${report.passed ? 'PASS' : 'FAIL'}: ${report.failureCount} violation(s) in ${(report.durationMs / 1000).toFixed(1)} s${report.quick ? ' (quick)' : ''}`,
  );
  for (const failure of report.failures.slice(0, 10))
    lines.push(
      `  ${failure.backend} / ${failure.faultClass} / ${failure.fault}: ${failure.kind}: ${failure.detail}`,
    );
  return lines.join('\n');
}

/** The report as Markdown (`harness-report.md`). */
export function formatReportMarkdown(report: HarnessReport): string {
  const md = (headers: string[], rows: string[][]) => [
    `| ${headers.join(' | ')} |`,
    `|${headers.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ];
  const out = [
    '# tidemark fault harness report',
    '',
    `${report.passed ? '**PASS**' : '**FAIL**'} — ${report.failureCount} violation(s), ${(report.durationMs / 1000).toFixed(1)} s, ${report.quick ? 'quick' : 'full'} run started ${report.startedAt}.`,
    '',
    '## Matrix',
    '',
    ...md(CELL_HEADERS, report.cells.map(cellRow)),
    '',
    '## Totals',
    '',
    ...md(TOTAL_HEADERS, totalsRows(report)),
  ];
  if (report.failures.length > 0) {
    out.push('', '## Violations (first 50)', '');
    for (const f of report.failures.slice(0, 50))
      out.push(`- ${f.backend} / ${f.faultClass} / ${f.fault}: **${f.kind}** ${f.detail}`);
  }
  return `${out.join('\n')}\n`;
}
