// Deliberately broken PostgreSQL stores caught by the driver's server-only cells on a real
// server, and those cells without a server. Without a server the suite skips, except with CI=true (it fails).
import { type HarnessReport, runFaultHarness } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { postgresDriver } from '../../src/harness/index.js';
import { missingTableIsNotFound, swallowsConnectionErrors } from './fixtures/broken-postgres.js';
import { PG_URL, requireOrSkip, serverUnavailable } from './fixtures/pg-server.js';

const skip = requireOrSkip(await serverUnavailable(), 'a PostgreSQL server');

function cell(report: HarnessReport, faultClass: string) {
  const found = report.cells.find((c) => c.faultClass === faultClass);
  expect(found, faultClass).toBeDefined();
  return found!;
}

// The clean runs of the PostgreSQL cells (the pair probe, statements, proxy, server actions,
// restarts) are in the quick harness the CLI's harness-quick test runs over every backend; here
// are the broken stores those cells must catch, and the cells without a server.
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
