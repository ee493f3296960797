import { describe, expect, it } from 'vitest';
import {
  AGENT_WORKLOAD,
  Checker,
  canonicalEvent,
  checkList,
  compareLog,
  formatReportMarkdown,
  formatReportTable,
  ModelSession,
  parseHarnessArgs,
  planErrorSweep,
  ReportBuilder,
  WorkloadModel,
  workloadEvent,
} from '../src/index.js';

function sessionWith(acked: number, inDoubt: number[][] = []): ModelSession {
  const session = new ModelSession('a', undefined);
  session.acked = Array.from({ length: acked }, (_, seq) =>
    canonicalEvent(workloadEvent('a', seq, 'user/message')),
  );
  session.inDoubt = inDoubt.map((seqs) =>
    seqs.map((seq) => canonicalEvent(workloadEvent('a', seq, 'tool/call'))),
  );
  return session;
}
const events = (specs: [number, string][]) => specs.map(([seq, type]) => workloadEvent('a', seq, type));

describe('compareLog', () => {
  it('after a relaxed crash, lets whole batches after the last boundary go, never a boundary batch or part of one', () => {
    const model = new WorkloadModel(true);
    const session = model.session('a');
    const batch = (specs: [number, string][]) => events(specs).map(canonicalEvent);
    session.ack(
      batch([
        [0, 'user/message'],
        [1, 'turn/end'],
      ]),
      true,
    );
    session.ack(
      batch([
        [2, 'user/message'],
        [3, 'tool/call'],
      ]),
      false,
    );
    session.ack(batch([[4, 'tool/result']]), false);
    const crashed = model.afterCrash().session('a');
    const log = (n: number) =>
      events([
        [0, 'user/message'],
        [1, 'turn/end'],
        [2, 'user/message'],
        [3, 'tool/call'],
        [4, 'tool/result'],
      ]).slice(0, n);
    for (const kept of [2, 4, 5]) expect(compareLog(crashed, log(kept), true)).toEqual({ lost: 0 });
    expect(compareLog(crashed, log(1), true).lost).toBe(1); // the boundary batch is owed
    expect(compareLog(crashed, log(3), true).unacknowledged).toBeDefined(); // half a batch
    expect(compareLog(session, log(4), true).lost).toBe(1); // no crash: nothing may go
    session.synced(); // close() resolved
    expect(compareLog(model.afterCrash().session('a'), log(4), true).lost).toBe(1);
  });

  it('accepts exactly the acknowledged events', () => {
    expect(
      compareLog(
        sessionWith(2),
        events([
          [0, 'user/message'],
          [1, 'user/message'],
        ]),
        false,
      ),
    ).toEqual({ lost: 0 });
  });

  it('counts missing and changed acknowledged events as lost', () => {
    expect(compareLog(sessionWith(3), events([[0, 'user/message']]), true).lost).toBe(2);
    expect(
      compareLog(
        sessionWith(2),
        events([
          [0, 'user/message'],
          [1, 'tool/call'],
        ]),
        true,
      ).lost,
    ).toBe(1);
  });

  it('accepts a whole in-doubt batch after the acknowledged ones only when allowed', () => {
    const session = sessionWith(1, [[1, 2]]);
    const whole = events([
      [0, 'user/message'],
      [1, 'tool/call'],
      [2, 'tool/call'],
    ]);
    expect(compareLog(session, whole, true)).toEqual({ lost: 0 });
    expect(compareLog(session, whole, false).unacknowledged).toMatch(/2 event/);
  });

  it('rejects part of an in-doubt batch: batches are all-or-nothing', () => {
    const session = sessionWith(1, [[1, 2]]);
    expect(
      compareLog(
        session,
        events([
          [0, 'user/message'],
          [1, 'tool/call'],
        ]),
        true,
      ).unacknowledged,
    ).toBeDefined();
  });

  it('reads existence from acknowledgements, doubt and deletes', () => {
    expect(sessionWith(0).exists).toBe('no');
    expect(sessionWith(0, [[0]]).exists).toBe('maybe');
    expect(sessionWith(1).exists).toBe('yes');
    const deleted = sessionWith(1);
    deleted.deleted = 'maybe';
    expect(deleted.exists).toBe('maybe');
    deleted.deleted = 'yes';
    expect(deleted.exists).toBe('no');
  });
});

describe('checkList', () => {
  it('flags an existing session left out, accepts it among problems while the fault lasts', () => {
    const model = new WorkloadModel();
    model.session('a', '/w').acked = ['x'];
    model.session('b', '/v');
    const check = new Checker();
    checkList(check, model, { sessions: [], problems: [] }, undefined, false);
    expect(check.outcome.absences).toBe(1);
    const tolerant = new Checker();
    checkList(tolerant, model, { sessions: [], problems: [{ id: 'sess-a' }] }, undefined, false);
    checkList(tolerant, model, { sessions: [], problems: [] }, '/v', false);
    expect(tolerant.outcome.violations).toEqual([]);
    const lifted = new Checker();
    checkList(lifted, model, { sessions: [], problems: [{ id: 'sess-a' }] }, undefined, true);
    expect(lifted.outcome.lostEvents).toBe(1);
  });

  it('flags a listed session that does not exist, unless a crash may have undone its delete', () => {
    const model = new WorkloadModel();
    const gone = model.session('a');
    gone.acked = ['x'];
    gone.deleted = 'yes';
    const check = new Checker();
    checkList(check, model, { sessions: [{ id: 'sess-a' }], problems: [] }, undefined, true);
    expect(check.outcome.violations.map((v) => v.kind)).toEqual(['phantom']);
    const crash = new Checker();
    checkList(crash, model, { sessions: [{ id: 'sess-a' }], problems: [] }, undefined, true, true);
    expect(crash.outcome.violations).toEqual([]);
  });
});

describe('Checker.attempt', () => {
  it('reports a rejection that is not a TidemarkError', async () => {
    const check = new Checker();
    const result = await check.attempt('has(x)', () =>
      Promise.reject(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' })),
    );
    expect(result.ok).toBe(false);
    expect(check.outcome.violations[0]?.kind).toBe('untyped-error');
  });
});

describe('planErrorSweep', () => {
  it('plans every operation × errno, once and persistent, plus a short write at each write', () => {
    const plan = planErrorSweep(['open', 'write', 'datasync'], ['EIO', 'ENOSPC'], ['EIO']);
    expect(plan).toHaveLength(3 * 3 + 1);
    expect(plan.filter((f) => f.shortWrite)).toEqual([
      { at: 2, errno: 'ENOSPC', mode: 'once', shortWrite: true },
    ]);
    expect(plan.filter((f) => f.mode === 'persistent').map((f) => f.at)).toEqual([1, 2, 3]);
    expect(planErrorSweep(['write'], ['EIO'], [], false)).toHaveLength(1);
  });
});

describe('the workload', () => {
  it('exercises every operation kind, an interrupted turn and a delete', () => {
    const kinds = new Set(AGENT_WORKLOAD.map((s) => s.kind));
    expect([...kinds].sort()).toEqual(['append', 'create', 'delete', 'has', 'list', 'load', 'update']);
    const appends = AGENT_WORKLOAD.filter((s) => s.kind === 'append');
    expect(appends.some((s) => s.kind === 'append' && !s.types.includes('turn/end'))).toBe(true);
  });

  it('writes deterministic events, so that another process can check them', () => {
    expect(canonicalEvent(workloadEvent('a', 3, 'tool/result'))).toBe(
      canonicalEvent(workloadEvent('a', 3, 'tool/result')),
    );
    expect(workloadEvent('a', 3, 'tool/result')).not.toEqual(workloadEvent('b', 3, 'tool/result'));
  });
});

describe('parseHarnessArgs', () => {
  it('reads --quick, --backends, --out and --kills', () => {
    expect(parseHarnessArgs([])).toEqual({
      quick: false,
      backends: ['memory', 'jsonl', 'sqlite', 'postgres'],
      drivers: [],
      out: '.',
      resolveFrom: [],
    });
    expect(parseHarnessArgs(['--quick', '--backends', 'jsonl', '--out=/tmp/r', '--kills', '5'])).toEqual({
      quick: true,
      backends: ['jsonl'],
      drivers: [],
      out: '/tmp/r',
      resolveFrom: [],
      kills: 5,
    });
    expect(() => parseHarnessArgs(['--bogus'])).toThrow(/Unknown option '--bogus'/);
    expect(() => parseHarnessArgs(['--out'])).toThrow(/--out <value>' argument missing/);
  });
});

describe('ReportBuilder', () => {
  it('fails a cell with any violation and renders the matrix', () => {
    const builder = new ReportBuilder();
    builder.add(
      'x',
      'EIO once',
      'op 1',
      { violations: [], errorsSurfaced: 2, lostEvents: 0, absences: 0 },
      true,
    );
    builder.add(
      'x',
      'crash (power loss)',
      'state 1',
      { violations: [{ kind: 'lost-event', detail: 'gone' }], errorsSurfaced: 0, lostEvents: 3, absences: 0 },
      true,
    );
    builder.notApplicable('y', 'real faults', 'no disk');
    const report = builder.build(true, new Date(), []);
    expect(report.passed).toBe(false);
    expect(report.failures).toEqual([
      {
        kind: 'lost-event',
        detail: 'gone',
        backend: 'x',
        faultClass: 'crash (power loss)',
        fault: 'state 1',
      },
    ]);
    expect(report.cells.map((c) => c.status)).toEqual(['pass', 'fail', 'n/a']);
    expect(formatReportTable(report)).toMatch(/crash \(power loss\)\s+x\s+1\s+1\s+0\s+0\s+3\s+1\s+FAIL/);
    expect(formatReportMarkdown(report)).toContain('| EIO once | x | 1 | 1 | 2 | 0 | 0 | 0 | PASS |');
  });

  it('stops sweeps once enough violations were found', () => {
    const builder = new ReportBuilder(1);
    expect(builder.enough).toBe(false);
    builder.add(
      'x',
      'c',
      'f',
      { violations: [{ kind: 'phantom', detail: '' }], errorsSurfaced: 0, lostEvents: 0, absences: 0 },
      true,
    );
    expect(builder.enough).toBe(true);
  });
});
