// The quick fault harness, once, as users and CI run it: `tidemark harness --quick` over every
// backend (memory, JSONL, SQLite, and PostgreSQL, which CI=true requires), every phase, the real
// processes included. Besides 0 violations, each sweep must really have injected faults that
// surfaced as typed errors: a harness that quietly swept nothing would pass otherwise. These
// checks were spread over the faults package's tests, which ran each backend's quick sweep again
// (and `pnpm test` ran the whole quick harness a third time at its end).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { HarnessReport, ReportCell } from '@tidemark/faults';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, home, useTempHome } from './run-cli.js';

const IN_CI = process.env.CI === 'true' || process.env.CI === '1';

/** Runs the built binary without blocking the test process (the run takes minutes). */
function runHarness(
  args: string[],
  cwd: string,
): Promise<{ status: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, TIDEMARK_HOME: cwd };
  for (const name of ['CI', 'TIDEMARK_PG_URL', 'TMPDIR'])
    if (process.env[name]) env[name] = process.env[name];
  const child = spawn(process.execPath, [BIN, 'harness', ...args], { cwd, env, stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  return new Promise((resolve) =>
    child.on('close', (code) => resolve({ status: code ?? -1, stdout, stderr })),
  );
}

describe('tidemark harness --quick over every backend', () => {
  useTempHome();
  let run: { status: number; stdout: string; stderr: string };
  let report: HarnessReport;
  let out: string;

  beforeAll(async () => {
    // useTempHome's directory exists only inside tests and their hooks, so make our own here.
    out = join(process.env.TMPDIR ?? '/tmp', `tidemark-harness-quick-${process.pid}`);
    run = await runHarness(['--quick', '--out', out], process.cwd());
    // The matrix in the test log, as `pnpm harness --quick` prints it.
    console.log(run.stdout);
    if (run.stderr !== '') console.error(run.stderr);
    report = JSON.parse(readFileSync(join(out, 'harness-report.json'), 'utf8')) as HarnessReport;
  }, 1_800_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  const cellOf = (backend: string, faultClass: string): ReportCell => {
    const cell = report.cells.find((c) => c.backend === backend && c.faultClass === faultClass);
    expect(cell, `${backend}: ${faultClass}`).toBeDefined();
    return cell as ReportCell;
  };
  const totalsOf = (backend: string) => report.totals.find((t) => t.backend === backend);

  it('passes every cell, exits 0 and writes the three reports', () => {
    expect(report.failures).toEqual([]);
    expect(report.passed).toBe(true);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('PASS');
    for (const ext of ['json', 'md', 'html'])
      expect(existsSync(join(out, `harness-report.${ext}`))).toBe(true);
    expect(report.quick).toBe(true);
  });

  it('memory: faults injected at its steps surface as typed errors', () => {
    const eio = cellOf('memory', 'EIO once');
    expect(eio.faultsInjected).toBeGreaterThan(10);
    expect(eio.errorsSurfaced).toBeGreaterThan(10);
    expect(totalsOf('memory')?.operationsSwept).toBeGreaterThan(10);
    // Its crash row points to no SIGKILL row: memory has none (issue 23).
    const crash = cellOf('memory', 'crash (power loss)');
    expect(crash.status).toBe('n/a');
    expect(crash.note).not.toMatch(/SIGKILL/);
    expect(report.cells.some((c) => c.backend === 'memory' && c.faultClass.startsWith('SIGKILL'))).toBe(
      false,
    );
  });

  it('jsonl: the error, crash, recovery, write-path and kill sweeps all ran', () => {
    expect(cellOf('jsonl', 'crash (power loss)').runs).toBeGreaterThan(100);
    expect(cellOf('jsonl', 'crash + EIO during recovery').faultsInjected).toBeGreaterThan(10);
    expect(cellOf('jsonl', 'EIO once').errorsSurfaced).toBeGreaterThan(10);
    // The write path is swept too, sampled in the quick run: faults reach its writers, and its
    // crash states (a writer's batches, resume's closing batch, a fork's copy) are reopened.
    expect(cellOf('jsonl', 'write path: EIO once').errorsSurfaced).toBeGreaterThan(5);
    expect(cellOf('jsonl', 'write path: crash (power loss)').runs).toBeGreaterThan(100);
    // Opened as a user opens it (no durability option), the store is crashed too and held to strict.
    expect(cellOf('jsonl', 'crash (power loss) [default]').runs).toBeGreaterThan(100);
    expect(cellOf('jsonl', 'defaults (no options)').status).toBe('pass');
    // close()'s storage calls (sidecars, catalog record, lock release) are in the error sweep's plan.
    const coverage = cellOf('jsonl', 'fault coverage (every operation)');
    expect(coverage.samples?.[0]?.fault).toMatch(/close\(\) swept too \(\d+ storage calls\)/);
    const totals = totalsOf('jsonl');
    expect(totals?.crashStates).toBeGreaterThan(1000);
    expect(totals?.kills).toBeGreaterThan(0);
    expect(totals?.killAcks).toBeGreaterThan(0);
  });

  it('sqlite: every statement step meets every quick errno, each surfacing as a typed error', () => {
    const sqlite = report.cells.filter((c) => c.backend === 'sqlite');
    expect(sqlite.some((c) => c.faultClass === 'injected errors' && c.status === 'n/a')).toBe(false);
    // Opening, migrating, and each statement of the workload: well over the workload's 19 calls.
    expect(totalsOf('sqlite')?.operationsSwept).toBeGreaterThan(50);
    for (const faultClass of ['EIO once', 'ENOSPC once', 'EACCES once', 'EIO persistent']) {
      const cell = cellOf('sqlite', faultClass);
      expect(cell.status, faultClass).toBe('pass');
      expect(cell.faultsInjected, faultClass).toBe(cell.runs);
      expect(cell.faultsInjected, faultClass).toBeGreaterThan(50);
      expect(cell.errorsSurfaced, faultClass).toBeGreaterThanOrEqual(cell.faultsInjected);
    }
    expect(totalsOf('sqlite')?.crashStates).toBeGreaterThan(0);
  });

  it('every backend raced every pair of calls across two instances', () => {
    for (const backend of ['memory', 'jsonl', 'sqlite', ...(IN_CI ? ['postgres'] : [])])
      expect(cellOf(backend, 'concurrent writers (every pair of calls)').status, backend).toBe('pass');
  });

  // Outside CI a machine without a server shows the PostgreSQL cells n/a (the faults tests cover that).
  it.runIf(IN_CI)('postgres: every statement meets each SQLSTATE class and a terminated backend', () => {
    for (const faultClass of ['pg: 08006 once', 'pg: 42P01 once', 'pg: terminate backend']) {
      const cell = cellOf('postgres', faultClass);
      expect(cell.status, faultClass).toBe('pass');
      expect(cell.faultsInjected, faultClass).toBeGreaterThan(0);
      expect(cell.errorsSurfaced, faultClass).toBeGreaterThan(0);
    }
    expect(cellOf('postgres', 'fault coverage (every operation)').status).toBe('pass');
    expect(totalsOf('postgres')?.operationsSwept).toBeGreaterThan(20);
  });

  it('refuses an unknown option with a non-zero status', async () => {
    const refused = await runHarness(['--no-such-option'], home());
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('--no-such-option');
  });
});
