// What a user does, the harness does too: the rules behind the rows `[default]` and the list walked
// page by page. The ties of `updatedAt` that make that walk worth doing are checked over each
// backend, in packages/{memory,jsonl,sqlite}/test/harness/workload-ties.test.ts.
import type { SessionPage, SessionStore } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { Checker, modeClass, modeReplayId, parseReplayId, walkList } from '../src/index.js';

/** A store whose `list` answers the pages given, in turn (only `list` is called). */
function pager(pages: SessionPage[]): SessionStore {
  let n = 0;
  return { list: async () => pages[Math.min(n++, pages.length - 1)]! } as unknown as SessionStore;
}
const summary = (id: string) => ({ id }) as SessionPage['sessions'][number];

describe('walkList', () => {
  it('follows the cursors to the end and collects every session once', async () => {
    const check = new Checker();
    const walked = await walkList(
      pager([
        { sessions: [summary('a')], problems: [{ id: 'x', error: 'CORRUPT' } as never], nextCursor: 'c1' },
        { sessions: [summary('b')], problems: [{ id: 'x', error: 'CORRUPT' } as never] },
      ]),
      check,
      {},
      1,
      5,
    );
    expect(check.outcome.violations).toEqual([]);
    expect(walked?.sessions.map((s) => s.id)).toEqual(['a', 'b']);
    expect(walked?.problems.map((p) => p.id)).toEqual(['x']);
  });

  it('flags a session on two pages, a page over its limit and cursors that never end', async () => {
    const twice = new Checker();
    await walkList(
      pager([
        { sessions: [summary('a')], problems: [], nextCursor: 'c1' },
        { sessions: [summary('a')], problems: [] },
      ]),
      twice,
      {},
      1,
      5,
    );
    expect(twice.outcome.violations.map((v) => v.detail)).toEqual([
      'list({ limit: 1 }) page 2 shows a again, already on page 1',
    ]);
    const long = new Checker();
    await walkList(pager([{ sessions: [summary('a'), summary('b')], problems: [] }]), long, {}, 1, 5);
    expect(long.outcome.violations.map((v) => v.kind)).toEqual(['list-paging']);
    const endless = new Checker();
    const walked = await walkList(
      pager([{ sessions: [], problems: [], nextCursor: 'c' }]),
      endless,
      {},
      1,
      3,
    );
    expect(walked).toBeUndefined();
    expect(endless.outcome.violations.map((v) => v.detail)).toEqual([
      'list({ limit: 1 }) page 4: the cursors have not ended after 3 pages',
    ]);
  });
});

describe('the rows and replay ids of a store opened with no options', () => {
  it('are suffixed [default] and prefixed default/, and the id parses after the prefix', () => {
    const mode = { durability: 'strict' as const, sample: 5, opensDefault: true };
    expect(modeClass('crash (power loss)', mode)).toBe('crash (power loss) [default]');
    expect(modeReplayId('crash:44:0', mode)).toBe('default/crash:44:0');
    expect(parseReplayId('crash:44:0')).toEqual({ kind: 'crash', afterOp: 44, stateIndex: 0 });
  });
});
