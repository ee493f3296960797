// The PostgreSQL driver's server-only cells on a real server, and deliberately broken store
// variants caught by them. Without a server the suite skips, except with CI=true (it fails).

import {
  concurrentPairs,
  formatReportTable,
  type HarnessReport,
  PAIRS_CELL,
  ReportBuilder,
  runFaultHarness,
} from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { postgresDriver } from '../../src/harness/index.js';
import { missingTableIsNotFound, swallowsConnectionErrors } from './fixtures/broken-postgres.js';
import { PG_URL, requireOrSkip, serverUnavailable } from './fixtures/pg-server.js';

const skip = requireOrSkip(await serverUnavailable(), 'a PostgreSQL server');

function expectPassed(report: HarnessReport): void {
  if (report.failures.length > 0) console.log(formatReportTable(report));
  expect(report.failures).toEqual([]);
}

function cell(report: HarnessReport, faultClass: string) {
  const found = report.cells.find((c) => c.faultClass === faultClass);
  expect(found, faultClass).toBeDefined();
  return found!;
}

// The cells below skip the `errors` phase: for PostgreSQL (no step injector) it is only the pair
// probe, which runs once, in its own test, rather than again with every group of cells.
describe.skipIf(skip)('harness over the PostgreSQL backend', () => {
  it('the pair probe: two instances race every pair of calls; no CORRUPT, false absence or damage', async () => {
    const builder = new ReportBuilder();
    const runs = await concurrentPairs(postgresDriver({ url: PG_URL }), builder, {
      quick: true,
      mode: { durability: 'strict', sample: 1 },
    });
    const report = builder.build(true, new Date(), []);
    expectPassed(report);
    expect(cell(report, PAIRS_CELL).status).toBe('pass');
    expect(runs).toBeGreaterThan(0);
  }, 600_000);

  it('sweeps every statement with each SQLSTATE class and pg_terminate_backend: no violation', async () => {
    const report = await runFaultHarness(postgresDriver({ url: PG_URL, cells: ['statements'] }), {
      quick: true,
      skip: ['real', 'errors'],
    });
    expectPassed(report);
    for (const faultClass of ['pg: 08006 once', 'pg: 42P01 once', 'pg: terminate backend']) {
      const c = cell(report, faultClass);
      expect(c.status, faultClass).toBe('pass');
      expect(c.faultsInjected, faultClass).toBeGreaterThan(0);
      expect(c.errorsSurfaced, faultClass).toBeGreaterThan(0);
    }
    expect(cell(report, 'fault coverage (every operation)').status).toBe('pass');
    expect(report.totals[0]?.operationsSwept).toBeGreaterThan(20);
  }, 600_000);

  it('proxy cells: drop, blackhole, delay, cuts both ways and write-then-cut: no violation', async () => {
    const report = await runFaultHarness(postgresDriver({ url: PG_URL, cells: ['proxy'] }), {
      quick: true,
      skip: ['real', 'errors'],
    });
    expectPassed(report);
  }, 600_000);

  it('server actions: REVOKE, DROP TABLE, read-only role, lock and statement timeouts: typed IO, no absence', async () => {
    const report = await runFaultHarness(postgresDriver({ url: PG_URL, cells: ['actions'] }), {
      quick: true,
      skip: ['real', 'errors'],
    });
    expectPassed(report);
  }, 600_000);

  it('immediate restarts under a writer loop lose no acknowledged batch', async () => {
    const report = await runFaultHarness(postgresDriver({ url: PG_URL, cells: ['restart'], restarts: 2 }), {
      quick: true,
      skip: ['real', 'errors'],
    });
    expectPassed(report);
  }, 600_000);
});

describe.skipIf(skip)('broken PostgreSQL stores are caught by the PostgreSQL cells', () => {
  // (k) A lost connection during an append reported as success: acknowledged, never stored.
  it('an append that swallows its connection error is caught (lost events or absence)', async () => {
    const report = await runFaultHarness(
      postgresDriver({ url: PG_URL, cells: ['statements'], open: swallowsConnectionErrors }),
      { quick: true, skip: ['real', 'errors'], stopAfterFailures: 1 },
    );
    expect(report.passed).toBe(false);
    // The batch was acknowledged but never stored: it is missing, or its whole session is.
    expect(report.failures.some((f) => f.kind === 'lost-event' || f.kind === 'false-absence')).toBe(true);
  }, 600_000);

  // (l) 42P01 taken for a missing session: DROP TABLE must surface as IO, never as absence.
  it('a store that maps a missing table (42P01) to NOT_FOUND is caught (false absence)', async () => {
    const report = await runFaultHarness(
      postgresDriver({ url: PG_URL, cells: ['actions'], open: missingTableIsNotFound }),
      { quick: true, skip: ['real', 'errors'] },
    );
    const dropped = cell(report, 'pg: DROP TABLE events (42P01)');
    expect(dropped.status).toBe('fail');
    expect(dropped.absences).toBeGreaterThan(0);
    expect(cell(report, 'pg: REVOKE INSERT ON events (42501)').status).toBe('pass');
  }, 600_000);
});

describe('the PostgreSQL cells without a server', () => {
  const nowhere = 'postgres://postgres@127.0.0.1:1/postgres';

  it('are n/a outside CI', async () => {
    const report = await runFaultHarness(postgresDriver({ url: nowhere, requireServer: false }), {
      quick: true,
      skip: ['real'],
    });
    expect(report.passed).toBe(true);
    expect(cell(report, 'pg: server').status).toBe('n/a');
  });

  it('are one failing cell when the server is required (CI=true)', async () => {
    const report = await runFaultHarness(postgresDriver({ url: nowhere, requireServer: true }), {
      quick: true,
      skip: ['real'],
    });
    expect(report.passed).toBe(false);
    expect(cell(report, 'pg: server').status).toBe('fail');
    expect(report.failures[0]?.kind).toBe('not-run');
  });
});
