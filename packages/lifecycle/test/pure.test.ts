import type { SessionSummary } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  DAY_MS,
  isPurgeable,
  parseActiveFile,
  parseAudit,
  planCopy,
  planPrune,
} from '../src/index.js';

const NOW = new Date('2026-06-01T00:00:00.000Z');
const summary = (id: string, daysAgo: number): SessionSummary => ({
  id,
  createdAt: '2020-01-01T00:00:00.000Z',
  updatedAt: new Date(NOW.getTime() - daysAgo * DAY_MS).toISOString(),
  eventCount: 1,
  committedSeq: -1,
  interrupted: true,
});

describe('planPrune', () => {
  it('takes strictly older sessions, oldest first, sparing active ones', () => {
    const all = [
      summary('a', 30),
      summary('b', 30.001),
      summary('c', 100),
      summary('d', 0),
      summary('e', 45),
    ];
    const plan = planPrune(all, new Set(['e']), 30, NOW);
    expect(plan.toTrash.map((s) => s.id)).toEqual(['c', 'b']);
    expect(plan.keptActive.map((s) => s.id)).toEqual(['e']);
    expect(plan.cutoff).toBe(new Date(NOW.getTime() - 30 * DAY_MS).toISOString());
  });

  it('never selects an active session, for every subset of actives', () => {
    const all = ['a', 'b', 'c', 'd'].map((id, i) => summary(id, 10 * (i + 1)));
    for (let mask = 0; mask < 16; mask++) {
      const active = new Set(all.filter((_, i) => mask & (1 << i)).map((s) => s.id));
      for (const days of [0, 15, 25, 35, 50]) {
        const plan = planPrune(all, active, days, NOW);
        for (const s of plan.toTrash) expect(active.has(s.id)).toBe(false);
        const old = all.filter((s) => Date.parse(s.updatedAt) < NOW.getTime() - days * DAY_MS);
        expect(plan.toTrash.length + plan.keptActive.length).toBe(old.length);
      }
    }
  });
});

describe('planPrune bounds', () => {
  it('rejects an age whose cutoff is no valid date with INVALID, not a RangeError', () => {
    for (const days of [1e9, Number.POSITIVE_INFINITY, Number.NaN, -1]) {
      expect(() => planPrune([summary('a', 1)], new Set(), days, NOW)).toThrow(
        expect.objectContaining({ name: 'TidemarkError', code: 'INVALID' }),
      );
    }
    // The oldest cutoff a Date holds is still a plan.
    const far = planPrune([summary('a', 1)], new Set(), 1e6, NOW);
    expect(Date.parse(far.cutoff)).toBe(NOW.getTime() - 1e6 * DAY_MS);
    expect(far.toTrash).toEqual([]);
  });
});

describe('isPurgeable', () => {
  it('is false before the grace period ends and true from its end', () => {
    const t = NOW.toISOString();
    expect(isPurgeable(t, 7, new Date(NOW.getTime() + 7 * DAY_MS - 1))).toBe(false);
    expect(isPurgeable(t, 7, new Date(NOW.getTime() + 7 * DAY_MS))).toBe(true);
    expect(isPurgeable(t, 0, NOW)).toBe(true);
  });
});

describe('planCopy', () => {
  it('classifies every relation of target to source', () => {
    expect(planCopy(['a', 'b'], ['a', 'b'])).toEqual({ kind: 'complete' });
    expect(planCopy(['a', 'b'], [])).toEqual({ kind: 'continue', fromSeq: 0 });
    expect(planCopy(['a', 'b'], ['a'])).toEqual({ kind: 'continue', fromSeq: 1 });
    expect(planCopy(['a', 'b'], ['a', 'x'])).toEqual({ kind: 'diverged', atSeq: 1 });
    expect(planCopy(['a'], ['a', 'b'])).toEqual({ kind: 'diverged', atSeq: 1 });
    expect(planCopy([], [])).toEqual({ kind: 'complete' });
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every depth and keeps arrays in order', () => {
    expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[{"c":2,"d":1}]}');
    expect(canonicalJson('x')).toBe('"x"');
    expect(canonicalJson({ __proto__: 1 } as never)).toBe('{}');
    expect(canonicalJson(JSON.parse('{"__proto__":1}'))).toBe('{"__proto__":1}');
  });
});

describe('parseAudit', () => {
  it('reads entries, reports bad lines by number and ignores a torn last line', () => {
    const good = JSON.stringify({ time: 't', action: 'created', id: 's1', store: 'memory:' });
    const text = `${good}\nnot json\n{"time":"t","action":"exploded","id":"s","store":"x"}\n\n${good}\n{"time":"t","act`;
    const parsed = parseAudit(text);
    expect(parsed.entries).toHaveLength(2);
    expect(parsed.problems).toEqual([
      { line: 2, message: 'not JSON' },
      { line: 3, message: 'not an audit entry' },
    ]);
    expect(parsed.tornTail).toBe(true);
    expect(parseAudit('').entries).toEqual([]);
  });
});

describe('parseActiveFile', () => {
  it('accepts the file it writes and rejects everything else as CORRUPT', () => {
    expect(parseActiveFile('{"version":1,"active":{"/a":"s1"}}')).toEqual({ '/a': 's1' });
    for (const bad of ['', '[]', '{"active":[]}', '{"active":{"/a":1}}', 'null']) {
      expect(() => parseActiveFile(bad)).toThrow(expect.objectContaining({ code: 'CORRUPT' }));
    }
  });
});
