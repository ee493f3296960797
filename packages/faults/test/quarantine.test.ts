import { describe, expect, it } from 'vitest';
import {
  Checker,
  checkQuarantine,
  type FsLayout,
  layoutGap,
  QUARANTINE_CHECK_ROW,
  quarantineCheckApplies,
  ReportBuilder,
  removalSweepFs,
} from '../src/index.js';

// A JSONL-like layout: the check knows files only by these roles.
const JSONL_LAYOUT: FsLayout = {
  isLog: (path) => path.endsWith('.jsonl') && !path.includes('/.quarantine/'),
  isQuarantine: (path) => path.includes('/.quarantine/'),
};

const enc = (s: string) => new TextEncoder().encode(s);
const LOG = '/store/sessions/cwd-1/sess-a.jsonl';
const Q = '/store/sessions/.quarantine';

function kinds(after: Record<string, string>): string[] {
  const check = new Checker();
  const before = new Map([[LOG, enc('line0\nline1\nline2\ntorn')]]);
  checkQuarantine(JSONL_LAYOUT, before, new Map(Object.entries(after).map(([p, s]) => [p, enc(s)])), check);
  return check.outcome.violations.map((v) => v.kind);
}

describe('removed bytes = quarantined bytes', () => {
  it('accepts a removed tail kept whole in one quarantine file', () => {
    expect(kinds({ [LOG]: 'line0\n', [`${Q}/a.tail.jsonl`]: 'line1\nline2\ntorn' })).toEqual([]);
  });

  it('accepts a tail cut after a torn-tail repair: the lines in one file, the fragment in another', () => {
    const after = { [LOG]: 'line0\n', [`${Q}/b.torn.bin`]: 'torn', [`${Q}/a.tail.jsonl`]: 'line1\nline2\n' };
    expect(kinds(after)).toEqual([]);
  });

  it('refuses a removal with a byte in no quarantine file, or files that do not lie end to end', () => {
    expect(kinds({ [LOG]: 'line0\n', [`${Q}/a.tail.jsonl`]: 'line1\nline2\n' })).toEqual([
      'unquarantined-bytes',
    ]);
    const gap = { [LOG]: 'line0\n', [`${Q}/b.torn.bin`]: 'orn', [`${Q}/a.tail.jsonl`]: 'line1\nline2\n' };
    expect(kinds(gap)).toEqual(['unquarantined-bytes']);
    // A file that was there before the removal is not where the removed bytes went.
    const check = new Checker();
    const before = new Map([
      [LOG, enc('line0\nline1\n')],
      [`${Q}/old.tail.jsonl`, enc('line1\n')],
    ]);
    checkQuarantine(
      JSONL_LAYOUT,
      before,
      new Map([
        [LOG, enc('line0\n')],
        [`${Q}/old.tail.jsonl`, enc('line1\n')],
      ]),
      check,
    );
    expect(check.outcome.violations.map((v) => v.kind)).toEqual(['unquarantined-bytes']);
  });
});

describe('what the layout lets the harness check', () => {
  it('checks bytes only for logs that grow at their end; a rewritten log would look like a removal', () => {
    expect(quarantineCheckApplies(JSONL_LAYOUT)).toBe(true);
    expect(quarantineCheckApplies({ ...JSONL_LAYOUT, logs: 'append' })).toBe(true);
    const rewrite: FsLayout = { ...JSONL_LAYOUT, logs: 'rewrite' };
    expect(quarantineCheckApplies(rewrite)).toBe(false);
    expect(quarantineCheckApplies(undefined)).toBe(false);
    // Why it must not run there: a whole-file rewrite changes bytes before the end.
    const check = new Checker();
    checkQuarantine(rewrite, new Map([[LOG, enc('{"n":1}')]]), new Map([[LOG, enc('{"n":2}')]]), check);
    expect(check.outcome.violations.map((v) => v.kind)).toEqual(['unquarantined-bytes']);
    expect(layoutGap(rewrite, 'quarantine')).toMatch(/rewritten whole/);
    expect(layoutGap(rewrite, 'removal')).toBeUndefined();
    expect(layoutGap(undefined, 'removal')).toMatch(/declares no layout/);
  });

  it('shows the tail cut and repair rows as n/a with the reason when a driver has no layout', async () => {
    const report = new ReportBuilder();
    const driver = {
      name: 'no-layout',
      kind: 'fs' as const,
      open: () => Promise.reject(new Error('not opened: there is nothing to sweep without a layout')),
    };
    expect(await removalSweepFs(driver, report, [], { durability: 'relaxed', sample: 1 })).toBe(0);
    const cells = report.build(true, new Date(), []).cells;
    expect(cells.map((c) => [c.faultClass, c.status])).toEqual([
      ['crash + tail cut [relaxed]', 'n/a'],
      ['crash + repair [relaxed]', 'n/a'],
    ]);
    expect(cells.every((c) => /declares no layout/.test(c.note ?? ''))).toBe(true);
    expect(QUARANTINE_CHECK_ROW).toBe('removed bytes = quarantined bytes');
  });
});
