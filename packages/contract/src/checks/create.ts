// create: lazy materialization, id reservation and generation, and the id and argument rules.
import { isValidId, type SessionStore } from '@tidemark/core';
import { expect } from 'vitest';
import { type ContractCheck, collect, ev, evs, expectCode, pause, violation } from '../harness.js';
import { eventsOf, listAll, materialize } from './support.js';

/** The checks of the `create` group. */
export const createChecks: ContractCheck[] = [
  {
    group: 'create',
    name: 'create is lazy: nothing is visible until the first append, which writes the meta',
    async run(ctx) {
      const store = await ctx.open();
      const meta = await store.create({
        id: 'lazy',
        cwd: '/work/lazy',
        parent: { id: 'origin', seq: 3 },
        title: 'T',
        tags: ['a'],
      });
      expect(meta.id).toBe('lazy');
      expect(meta.cwd).toBe('/work/lazy');
      expect(meta.parent).toEqual({ id: 'origin', seq: 3 });
      if (Number.isNaN(Date.parse(meta.createdAt)) || !meta.createdAt.endsWith('Z')) {
        violation(`meta.createdAt is not ISO-8601 UTC: ${meta.createdAt}`);
      }
      if (!Number.isSafeInteger(meta.formatVersion) || meta.formatVersion < 1)
        violation(`meta.formatVersion is ${meta.formatVersion}`);
      expect(await store.has('lazy')).toBe(false);
      expect((await store.list()).sessions).toEqual([]);
      await expectCode(store.load('lazy'), 'NOT_FOUND', 'load of a pending session');
      await expectCode(() => collect(store.read('lazy')), 'NOT_FOUND', 'read of a pending session');
      const other = await ctx.reopen(store);
      expect(await other.has('lazy')).toBe(false);
      expect((await other.list()).sessions).toEqual([]);

      await store.append('lazy', [ev(0, 'user/message', { text: 'first' })]);
      expect(await store.has('lazy')).toBe(true);
      expect(await other.has('lazy')).toBe(true);
      const loaded = await other.load('lazy');
      expect(loaded.meta).toEqual(meta);
      expect(loaded.summary).toMatchObject({
        id: 'lazy',
        cwd: '/work/lazy',
        parent: { id: 'origin', seq: 3 },
        title: 'T',
        tags: ['a'],
      });
      expect(loaded.summary.createdAt).toBe(meta.createdAt);
      expect((await store.list()).sessions.map((s) => s.id)).toEqual(['lazy']);
    },
  },
  {
    group: 'create',
    name: 'create of a materialized or pending id is ALREADY_EXISTS',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'twice' });
      await expectCode(
        store.create({ id: 'twice' }),
        'ALREADY_EXISTS',
        'create of an id pending in this instance',
      );
      await store.append('twice', evs(0, 1));
      await expectCode(store.create({ id: 'twice' }), 'ALREADY_EXISTS', 'create of a materialized id');
      await store.close();
      const reopened = await ctx.reopen(store);
      await expectCode(
        reopened.create({ id: 'twice' }),
        'ALREADY_EXISTS',
        'create of a materialized id after reopen',
      );
      expect(await eventsOf(reopened, 'twice')).toEqual(evs(0, 1));
    },
  },
  {
    group: 'create',
    name: 'a given createdAt is no change: updatedAt is the time of the appends, even when createdAt is later',
    async run(ctx) {
      // An import keeps the original's createdAt, which another machine's clock may have put in the
      // future: the session must still be listed and pruned by when it was last appended to here.
      const store = await ctx.open();
      await store.create({ id: 'future', createdAt: '2999-01-01T00:00:00.000Z' });
      await store.create({ id: 'past', createdAt: '2001-01-01T00:00:00.000Z' });
      const before = Date.now();
      await store.append('future', [ev(0)]);
      await pause(5);
      await store.append('past', [ev(0)]);
      const after = Date.now();
      const inWindow = async (reader: SessionStore, what: string) => {
        const summaries = await listAll(reader);
        expect(summaries.map((s) => s.id)).toEqual(['past', 'future']);
        for (const summary of summaries) {
          const at = Date.parse(summary.updatedAt);
          if (!(at >= before && at <= after))
            violation(
              `${what}: ${summary.id} has updatedAt ${summary.updatedAt}, not the time of its append`,
            );
        }
        expect((await reader.load('future')).meta.createdAt).toBe('2999-01-01T00:00:00.000Z');
      };
      await inWindow(store, 'the writing instance');
      await inWindow(await ctx.reopen(store), 'a second instance');
      await store.close();
      const restarted = await ctx.reopen(store);
      await inWindow(restarted, 'after a restart');
      await pause(5);
      await restarted.append('future', [ev(1)]);
      const latest = (await restarted.list()).sessions[0]!;
      expect(latest.id).toBe('future');
      if (Date.parse(latest.updatedAt) > Date.now())
        violation(`a later append set updatedAt ${latest.updatedAt}, in the future`);
    },
  },
  {
    group: 'create',
    name: 'create without an id generates valid, distinct, time-ordered ids',
    async run(ctx) {
      const store = await ctx.open();
      const ids: string[] = [];
      // Eight ids: a random generator passes the order test by chance only once in 8! = 40,320.
      for (let i = 0; i < 8; i++) {
        ids.push((await store.create()).id);
        await pause(2);
      }
      for (const id of ids)
        if (!isValidId(id)) violation(`generated id ${JSON.stringify(id)} is not a valid id`);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids].sort()).toEqual(ids);
      await store.append(ids[0]!, evs(0, 1));
      expect(await store.has(ids[0]!)).toBe(true);
    },
  },
  {
    group: 'create',
    name: 'invalid ids are INVALID for every method, never absence',
    async run(ctx) {
      const store = await ctx.open();
      for (const id of ['../x', '.hidden', '', 'a'.repeat(129), 'a/b', 'a\\b', 'sp ace', 'nul\u0000']) {
        const what = `id ${JSON.stringify(id.slice(0, 20))}`;
        await expectCode(store.create({ id }), 'INVALID', `create with ${what}`);
        await expectCode(store.append(id, evs(0, 1)), 'INVALID', `append with ${what}`);
        await expectCode(store.load(id), 'INVALID', `load with ${what}`);
        await expectCode(() => collect(store.read(id)), 'INVALID', `read with ${what}`);
        await expectCode(store.has(id), 'INVALID', `has with ${what}`);
        await expectCode(store.update(id, { title: 't' }), 'INVALID', `update with ${what}`);
        await expectCode(store.delete(id), 'INVALID', `delete with ${what}`);
      }
      // The longest valid id works.
      const longest = 'a'.repeat(128);
      await materialize(store, longest);
      expect(await store.has(longest)).toBe(true);
      expect((await store.list()).sessions.map((s) => s.id)).toEqual([longest]);
    },
  },
  {
    group: 'create',
    name: 'create, load and list reject malformed arguments with INVALID and create nothing',
    async run(ctx) {
      const store = await ctx.open();
      const bad: Array<[string, unknown]> = [
        ['a cwd that is not a string', { id: 'c1', cwd: 5 }],
        ['an unknown field', { id: 'c2', colour: 'red' }],
        ['tags that are not strings', { id: 'c3', tags: [1] }],
        ['a parent without seq', { id: 'c4', parent: { id: 'p' } }],
        ['a parent with a bad id', { id: 'c5', parent: { id: '../p', seq: 0 } }],
        ['a title that is not a string', { id: 'c6', title: {} }],
        ['an array', []],
      ];
      for (const [what, init] of bad)
        await expectCode(store.create(init as { id: string }), 'INVALID', `create with ${what}`);
      for (const id of ['c1', 'c2', 'c3', 'c4', 'c5', 'c6']) {
        await expectCode(
          store.append(id, [ev(0)]),
          'NOT_FOUND',
          `append to ${id} after its create was rejected`,
        );
      }
      await materialize(store, 'loaded');
      await expectCode(
        store.load('loaded', { tail: 'trim' } as unknown as { tail: 'cut' }),
        'INVALID',
        "load with tail: 'trim'",
      );
      await expectCode(
        store.list({ cwd: 7 } as unknown as { cwd: string }),
        'INVALID',
        'list with a numeric cwd',
      );
      expect((await store.list()).sessions.map((s) => s.id)).toEqual(['loaded']);
    },
  },
];
