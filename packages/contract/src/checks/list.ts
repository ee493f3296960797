// list: order, paging, the cwd filter, the summary fields (firstPrompt included) and the text rules.
import { FIRST_PROMPT_LENGTH, promptOf, type SessionStore, type SessionSummary } from '@tidemark/core';
import { expect } from 'vitest';
import { type ContractCheck, ev, evs, expectCode, pause, violation } from '../harness.js';
import { listAll, materialize } from './support.js';

function assertListOrder(sessions: SessionSummary[], what: string): void {
  for (let i = 1; i < sessions.length; i++) {
    const a = sessions[i - 1]!;
    const b = sessions[i]!;
    const ordered = a.updatedAt > b.updatedAt || (a.updatedAt === b.updatedAt && a.id < b.id);
    if (!ordered) violation(`${what}: ${a.id} (${a.updatedAt}) is listed before ${b.id} (${b.updatedAt})`);
  }
}

/** The checks of the `list` group. */
export const listChecks: ContractCheck[] = [
  {
    group: 'list',
    name: 'list orders by updatedAt, newest first, ties by id, and an update moves a session up',
    async run(ctx) {
      const store = await ctx.open();
      for (const id of ['s-a', 's-b', 's-c']) {
        await materialize(store, id);
        await pause(3);
      }
      let listed = (await store.list()).sessions;
      expect(listed.map((s) => s.id)).toEqual(['s-c', 's-b', 's-a']);
      assertListOrder(listed, 'list');
      await store.update('s-a', { title: 'touched' });
      await pause(3);
      await store.append('s-b', [ev(1)]);
      listed = (await store.list()).sessions;
      expect(listed.map((s) => s.id)).toEqual(['s-b', 's-a', 's-c']);
      assertListOrder(listed, 'list after update and append');
      expect((await store.list()).problems).toEqual([]);
    },
  },
  {
    group: 'list',
    name: 'paging with limit and cursor covers every session exactly once; cwd filters',
    async run(ctx) {
      const store = await ctx.open();
      const ids = Array.from({ length: 9 }, (_, i) => `page-${i}`);
      for (const [i, id] of ids.entries())
        await materialize(store, id, evs(0, 1), i % 3 === 0 ? '/w/one' : '/w/two');
      for (const limit of [1, 2, 4, 9, 10]) {
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await store.list({ limit, ...(cursor !== undefined && { cursor }) });
          expect(page.sessions.length).toBeLessThanOrEqual(limit);
          expect(page.problems).toEqual([]);
          seen.push(...page.sessions.map((s) => s.id));
          cursor = page.nextCursor;
          if (++pages > 20) violation(`paging with limit ${limit} does not end`);
        } while (cursor !== undefined);
        expect(seen.length, `sessions seen with limit ${limit}`).toBe(ids.length);
        expect([...seen].sort()).toEqual([...ids].sort());
        expect(pages).toBe(Math.max(1, Math.ceil(ids.length / limit)));
      }
      const all = await listAll(store);
      assertListOrder(all, 'list');
      const one = await listAll(store, '/w/one', 2);
      expect(one.map((s) => s.id).sort()).toEqual(['page-0', 'page-3', 'page-6']);
      for (const s of one) expect(s.cwd).toBe('/w/one');
      expect((await listAll(store, '/w/two', 4)).length).toBe(6);
      expect(await listAll(store, '/w/none')).toEqual([]);
    },
  },
  {
    group: 'list',
    name: 'summaries carry eventCount, commit state, title, tags, attrs and the derived firstPrompt',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({
        id: 'described',
        cwd: '/w',
        title: 'Title',
        tags: ['x', 'y'],
        parent: { id: 'p', seq: 0 },
      });
      const events = [
        ev(0, 'turn/start'),
        ev(1, 'user/message', { text: '  hello\n   world  ' }),
        ev(2, 'turn/end'),
        ev(3, 'user/message', { text: 'later' }),
      ];
      await store.append('described', events);
      await store.update('described', { attrs: { model: 'm', n: 1 } });
      const expectedPrompt = promptOf(events[1]!);
      const [summary] = (await store.list()).sessions;
      expect(summary).toMatchObject({
        id: 'described',
        cwd: '/w',
        parent: { id: 'p', seq: 0 },
        eventCount: 4,
        committedSeq: 2,
        interrupted: true,
        title: 'Title',
        tags: ['x', 'y'],
        attrs: { model: 'm', n: 1 },
        firstPrompt: expectedPrompt,
      });
      expect(summary).toEqual((await store.load('described')).summary);
      await materialize(store, 'plain-string', [ev(0, 'user/message', 'just text')]);
      expect((await store.load('plain-string')).summary.firstPrompt).toBe('just text');
      await materialize(store, 'no-prompt', [ev(0, 'tool/call', { text: 'not a prompt' })]);
      expect((await store.load('no-prompt')).summary.firstPrompt).toBeUndefined();
    },
  },
  {
    group: 'list',
    name: 'list rejects a bad limit or cursor with INVALID',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'one');
      await materialize(store, 'two');
      for (const limit of [0, -1, 1.5, Number.NaN, 1_000_000])
        await expectCode(store.list({ limit }), 'INVALID', `limit ${limit}`);
      for (const cursor of ['not a cursor!', 'e30', Buffer.from('[1,2]').toString('base64url')]) {
        await expectCode(store.list({ cursor }), 'INVALID', `cursor ${JSON.stringify(cursor)}`);
      }
      await expectCode(
        store.list({ limit: '2' } as unknown as { limit: number }),
        'INVALID',
        'limit as a string',
      );
      expect((await store.list({ limit: 1 })).sessions.length).toBe(1);
    },
  },
  {
    group: 'list',
    name: 'firstPrompt follows the shared rule: first user/message, whitespace flattened, long text shortened',
    async run(ctx) {
      const store = await ctx.open();
      const long = `${'word '.repeat(100)}end`;
      const events = [
        ev(0, 'user/message', {}),
        ev(1, 'user/message', { content: `  ${long}\n` }),
        ev(2, 'user/message', 'later'),
      ];
      await store.create({ id: 'prompted' });
      await store.append('prompted', events.slice(0, 1));
      expect(
        (await store.load('prompted')).summary.firstPrompt,
        'a user/message without text gives no prompt',
      ).toBeUndefined();
      await store.append('prompted', events.slice(1));
      const expected = promptOf(events[1]!);
      expect(expected?.length).toBeLessThan(long.length);
      expect((await store.load('prompted')).summary.firstPrompt).toBe(expected);
      expect((await store.list()).sessions[0]?.firstPrompt).toBe(expected);
    },
  },
  {
    group: 'list',
    name: 'text fields are well-formed Unicode: an emoji across the prompt limit survives reopen; lone surrogates are INVALID',
    async run(ctx) {
      const store = await ctx.open();
      const emoji = '\ud83d\ude00';
      // The pair straddles the prompt limit: cutting it would leave a lone half, which a backend
      // storing text as UTF-8 cannot keep.
      const message = ev(
        0,
        'user/message',
        `${'a'.repeat(FIRST_PROMPT_LENGTH - 2)}${emoji}${'b'.repeat(50)}`,
      );
      await store.create({ id: 'emoji', title: `title ${emoji}`, tags: [emoji], cwd: `/w/${emoji}` });
      await store.append('emoji', [message, ev(1, 'turn/end', { text: `lone in data is kept \ud83d` })]);
      const expected = promptOf(message)!;
      expect(
        expected.includes('\ud83d') && !expected.includes(emoji),
        'the derived prompt split the pair',
      ).toBe(false);
      const check = async (s: SessionStore) => {
        const loaded = await s.load('emoji');
        expect(loaded.summary.firstPrompt).toBe(expected);
        expect(loaded.summary.title).toBe(`title ${emoji}`);
        expect(loaded.summary.tags).toEqual([emoji]);
        expect(loaded.meta.cwd).toBe(`/w/${emoji}`);
        expect(loaded.events[1]!.data).toEqual({ text: `lone in data is kept \ud83d` });
        expect((await listAll(s, `/w/${emoji}`)).map((x) => x.firstPrompt)).toEqual([expected]);
      };
      await check(store);
      for (const [what, attempt] of [
        ['type', () => store.append('emoji', [ev(2, 'tool/\ud83d', null)])],
        ['title', () => store.update('emoji', { title: 'x\ude00' })],
        ['cwd', () => store.create({ id: 'lone-cwd', cwd: '/w/\ud83d' })],
      ] as const) {
        await expectCode(attempt(), 'INVALID', `a lone surrogate in ${what}`);
      }
      await store.close();
      await check(await ctx.reopen(store));
    },
  },
  {
    group: 'list',
    name: 'cwd is an opaque string: empty, relative, Windows-style, unicode and multi-line values filter exactly',
    async run(ctx) {
      const store = await ctx.open();
      const cwds = ['', '../../etc', 'C:\\Users\\agent', '/tmp/ünï cödé 🌊', '/a\nb', '/w', '/w/'];
      for (const [i, cwd] of cwds.entries()) await materialize(store, `cwd-${i}`, evs(0, 1), cwd);
      await materialize(store, 'no-cwd');
      const check = async (s: SessionStore) => {
        for (const [i, cwd] of cwds.entries()) {
          expect(
            (await listAll(s, cwd)).map((x) => x.id),
            `list with cwd ${JSON.stringify(cwd)}`,
          ).toEqual([`cwd-${i}`]);
          expect((await s.load(`cwd-${i}`)).meta.cwd).toBe(cwd);
        }
        const noCwd = await s.load('no-cwd');
        expect(noCwd.meta.cwd).toBeUndefined();
        expect(noCwd.summary.cwd).toBeUndefined();
        expect((await listAll(s)).length).toBe(cwds.length + 1);
      };
      await check(store);
      await store.close();
      await check(await ctx.reopen(store));
    },
  },
];
