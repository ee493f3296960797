// What a store's objects keep of the logs they wrote stays bounded: by sessions, by messages, and
// by the size of the records (a workflow run's record is its whole snapshot), least recently used
// first; a record too large to keep is not kept at all.
import type { SessionEvent } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { KnownLogs } from '../src/known-logs.js';

const MiB = 1024 * 1024;
const last = (chars: number): SessionEvent => ({
  seq: 1,
  type: 'mastra/run',
  time: '2026-12-06T00:00:00.000Z',
  data: { snapshot: 'x'.repeat(chars) },
});

describe('the logs a store knows', () => {
  it('drop the least recently used records once their size passes the budget', () => {
    const known = new KnownLogs();
    known.set('a', { last: last(7 * MiB) });
    known.set('b', { last: last(7 * MiB) });
    known.set('c', { last: last(7 * MiB) });
    expect(known.get('a')).toBeDefined(); // a is now the most recently used
    known.set('d', { last: last(7 * MiB) });
    known.set('e', { last: last(7 * MiB) }); // 35 MiB in all: over 32, b goes first
    expect(known.get('b')).toBeUndefined();
    expect(['a', 'c', 'd', 'e'].map((id) => known.get(id) !== undefined)).toEqual([true, true, true, true]);
    known.forget('a');
    known.set('f', { last: last(7 * MiB) }); // a's size was given back: nothing else goes
    expect(['c', 'd', 'e', 'f'].map((id) => known.get(id) !== undefined)).toEqual([true, true, true, true]);
  });

  it('keep no record larger than a quarter of the budget, and forget what was known of it', () => {
    const known = new KnownLogs();
    known.set('big', { last: last(1024) });
    known.set('big', { last: last(9 * MiB) });
    expect(known.get('big')).toBeUndefined();
    known.set('small', { last: last(1024) });
    expect(known.get('small')?.last.seq).toBe(1);
  });

  it('drop the least recently used threads once their messages pass the bound', () => {
    const known = new KnownLogs();
    const messages = (n: number) => new Map(Array.from({ length: n }, (_, i) => [`m${i}`, { i }]));
    known.set('t1', { last: last(10), messages: messages(30_000) });
    known.set('t2', { last: last(10), messages: messages(30_000) });
    expect(known.get('t1')).toBeUndefined();
    expect(known.get('t2')?.messages?.size).toBe(30_000);
  });
});
