import type { Violation } from '../verdicts/model.js';
import type { RunOutcome, TypedErrorRecord } from '../workload/runner.js';
import { replayCommand, rerunCommand } from './replay-command.js';

/**
 * How to reproduce one run exactly. The error and crash sweeps are deterministic: the same
 * workload, the same fault at the same operation, the same crash state.
 */
export interface Reproduction {
  /** What `--replay` takes (with `--backends` naming the one backend), e.g. `error:17:EIO:once`. */
  replayId?: string;
  /** 1-based storage operation (or engine step) the fault hit. */
  operation?: number;
  /** The crash state: `after op 12 (datasync), state 3: <label>`. */
  crashState?: string;
  /** Seed of the run's randomness; absent when the run has none (the sweeps). */
  seed?: number;
  /** The workload step the fault hit (`#7 append(a)`), when the harness knows it. */
  step?: string;
}

/** One run of a cell as the report keeps it: what was injected, what came back, what broke. */
export interface RunRecord {
  /** The fault of the run, as in {@link HarnessFailure.fault}. */
  fault: string;
  /** Whether the fault was really injected. */
  injected: boolean;
  /** The first call that got a typed error, with its workload step. */
  firstError?: TypedErrorRecord;
  /** The run's violations (the first few). */
  violations: Violation[];
  /** All violations of the run. */
  violationCount: number;
  reproduction?: Reproduction;
}

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
  /**
   * Runs kept for the HTML report: the violating ones (at most {@link MAX_FAILING_RUNS}), then the
   * first few passing ones ({@link MAX_PASSING_RUNS}). `runs` has how many there were in all.
   */
  samples?: RunRecord[];
}

/** A violation with where it happened. */
export interface HarnessFailure extends Violation {
  backend: string;
  faultClass: string;
  /** The fault of the run: `EIO once at op 17 (datasync /s/x.jsonl)`, a crash state, a kill number. */
  fault: string;
  reproduction?: Reproduction;
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
  /**
   * How the command line selected each backend, by name (`--backends jsonl`,
   * `--driver /abs/driver.js`), for the replay commands the formatters print; absent for a run
   * started from the library API without `selectors`.
   */
  selectors?: Record<string, string>;
}

const MAX_EXAMPLES = 5;
const MAX_FAILURES = 500;
/** Violating runs kept per cell for the HTML report. */
export const MAX_FAILING_RUNS = 20;
/** Passing runs kept per cell for the HTML report. */
export const MAX_PASSING_RUNS = 5;
/** Violations kept per run record. */
const MAX_RUN_VIOLATIONS = 5;

function keepRun(cell: ReportCell, record: RunRecord): void {
  cell.samples ??= [];
  const failing = record.violationCount > 0;
  const kept = cell.samples.filter((r) => r.violationCount > 0 === failing).length;
  if (kept < (failing ? MAX_FAILING_RUNS : MAX_PASSING_RUNS)) cell.samples.push(record);
}

/** Accumulates outcomes into cells and failures. */
export class ReportBuilder {
  private readonly cells = new Map<string, ReportCell>();
  /** Cells whose faults must surface a typed error somewhere, with the outcome they exist to test. */
  private readonly expected = new Map<ReportCell, string>();
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

  /** Records one run of a cell; `reproduction` says how to run it again. */
  add(
    backend: string,
    faultClass: string,
    fault: string,
    outcome: RunOutcome,
    injected: boolean,
    reproduction?: Reproduction,
  ): void {
    const cell = this.cell(backend, faultClass);
    keepRun(cell, {
      fault,
      injected,
      ...(outcome.firstError !== undefined && { firstError: outcome.firstError }),
      violations: outcome.violations.slice(0, MAX_RUN_VIOLATIONS),
      violationCount: outcome.violations.length,
      ...(reproduction !== undefined && { reproduction }),
    });
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
        this.failures.push({
          ...violation,
          backend,
          faultClass,
          fault,
          ...(reproduction !== undefined && { reproduction }),
        });
    }
  }

  /**
   * The cell exists to show that its faults surface as typed errors (`outcome` says which): if
   * faults were injected and none ever did, the fault was swallowed or never reached the store,
   * and the cell fails at {@link ReportBuilder.build} (`outcome-missing`) instead of passing.
   */
  expectErrors(backend: string, faultClass: string, outcome = 'a typed error'): void {
    this.expected.set(this.cell(backend, faultClass), outcome);
  }

  /**
   * True when the cell of `faultClass` had faults injected and none surfaced as an error yet: as it
   * stands it proves nothing (and, if it expects errors, fails at {@link ReportBuilder.build}).
   */
  provesNothing(backend: string, faultClass: string): boolean {
    const cell = this.cells.get(`${backend}\0${faultClass}`);
    return cell !== undefined && provesNothing(cell);
  }

  private checkExpected(): void {
    for (const [cell, outcome] of this.expected) {
      if (!provesNothing(cell)) continue;
      const detail = `${cell.faultsInjected} injected fault(s), none surfaced as ${outcome}: the cell proves nothing`;
      cell.status = 'fail';
      cell.violations++;
      if (cell.examples.length < MAX_EXAMPLES) cell.examples.push(`whole cell: outcome-missing: ${detail}`);
      this.failureCount++;
      if (this.failures.length < MAX_FAILURES)
        this.failures.push({
          kind: 'outcome-missing',
          detail,
          backend: cell.backend,
          faultClass: cell.faultClass,
          fault: 'whole cell',
        });
    }
    this.expected.clear();
  }

  build(
    quick: boolean,
    startedAt: Date,
    totals: BackendTotals[],
    selectors?: Readonly<Record<string, string>>,
  ): HarnessReport {
    this.checkExpected();
    const cells = [...this.cells.values()];
    return {
      ...(selectors !== undefined && { selectors: { ...selectors } }),
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

/** The command that runs a failure's run again: its replay id, else its backend's whole run. */
function failureCommand(report: HarnessReport, failure: HarnessFailure): string {
  const id = failure.reproduction?.replayId;
  return id === undefined
    ? rerunCommand(failure.backend, report.quick, report.selectors)
    : replayCommand(failure.backend, id, report.quick, report.selectors);
}

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
      `    replay: ${failureCommand(report, failure)}`,
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
      out.push(
        `- ${f.backend} / ${f.faultClass} / ${f.fault}: **${f.kind}** ${f.detail} — replay: \`${failureCommand(report, f)}\``,
      );
  }
  return `${out.join('\n')}\n`;
}

function provesNothing(cell: ReportCell): boolean {
  return cell.status !== 'n/a' && cell.faultsInjected > 0 && cell.errorsSurfaced === 0;
}
