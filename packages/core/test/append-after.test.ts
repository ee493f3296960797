// append(…, { after }): the option's validation, the event comparison and the CONFLICT a backend
// raises inside its write, and the capability callers test. The base store's use of them is in
// base-store.test.ts.
import { describe, expect, it } from 'vitest';
import {
  type AppendOptions,
  assertStoredAfter,
  checksAppendAfter,
  type JsonValue,
  prepareBatch,
  prepareEvent,
  type SessionEvent,
  type SessionStore,
  sameEvent,
  TidemarkError,
  validateAppendOptions,
} from '../src/index.js';

const time = '2026-11-29T10:00:00.000Z';
const ev = (seq: number, type = 'note', data: JsonValue = { seq }): SessionEvent => ({
  seq,
  type,
  time,
  data,
});
const batch = (...seqs: number[]) => prepareBatch(seqs.map((s) => ev(s)));

/** The TidemarkError `fn` throws; fails when it returns. */
function thrown(fn: () => unknown): TidemarkError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(TidemarkError);
    return error as TidemarkError;
  }
  throw new Error('expected a TidemarkError, but the call returned');
}

describe('validateAppendOptions', () => {
  it('no options, or options without after, give no after', () => {
    expect(validateAppendOptions(undefined, batch(3))).toBeUndefined();
    expect(validateAppendOptions({}, batch(3))).toBeUndefined();
    expect(validateAppendOptions({ after: undefined }, batch(3))).toBeUndefined();
  });

  it('returns after prepared (a copy) when it is the event right before the batch', () => {
    const after = ev(2, 'turn/end', { list: [1] });
    const prepared = validateAppendOptions({ after }, batch(3, 4));
    expect(prepared?.event).toEqual(after);
    expect(prepared?.event).not.toBe(after);
  });

  it.each([
    ['null', null],
    ['a string', 'after'],
    ['a number', 2],
    ['an array', [ev(2)]],
  ])('options that are %s are INVALID', (_name, options) => {
    const error = thrown(() => validateAppendOptions(options, batch(3)));
    expect(error.code).toBe('INVALID');
    expect(error.message).toContain('options must be an object');
  });

  it.each([
    ['not an object', 'event', 'options.after'],
    ['missing its time', { seq: 2, type: 'note', data: 1 }, 'options.after.time'],
    ['with a negative seq', { ...ev(2), seq: -1 }, 'options.after.seq'],
    ['with an empty type', { ...ev(2), type: '' }, 'options.after.type'],
    ['with an unknown field', { ...ev(2), extra: true }, 'options.after.extra'],
    ['with NaN in its data', { ...ev(2), data: { x: Number.NaN } }, 'options.after'],
  ])('an after %s is INVALID, naming the path %s', (_name, after, path) => {
    const error = thrown(() => validateAppendOptions({ after }, batch(3)));
    expect(error.code).toBe('INVALID');
    expect(error.message).toContain(path);
  });

  it('an after that is not the event right before the batch is INVALID, naming both seqs', () => {
    for (const seq of [0, 1, 3, 4]) {
      const error = thrown(() => validateAppendOptions({ after: ev(seq) }, batch(3, 4)));
      expect(error.code).toBe('INVALID');
      expect(error.message).toContain(`seq ${seq}`);
      expect(error.message).toContain('starts at seq 3');
    }
  });

  it('a batch starting at seq 0 has nothing before it: any after is INVALID', () => {
    for (const after of [ev(0), ev(1), { ...ev(0), seq: -1 }]) {
      expect(thrown(() => validateAppendOptions({ after }, batch(0, 1))).code).toBe('INVALID');
    }
    expect(thrown(() => validateAppendOptions({ after: ev(0) }, batch(0, 1))).message).toMatch(
      /starts at seq 0, after no event/,
    );
  });

  it('applies the store limits to after', () => {
    const after = ev(2, 'note', { text: 'x'.repeat(200) });
    expect(validateAppendOptions({ after }, batch(3))?.event).toEqual(after);
    const error = thrown(() => validateAppendOptions({ after }, batch(3), { maxEventBytes: 64 }));
    expect(error.code).toBe('INVALID');
    expect(error.message).toContain('options.after');
  });
});

describe('sameEvent', () => {
  it('is true for the same seq, type, time and deep-equal data, whatever the key order', () => {
    expect(sameEvent(ev(1), ev(1))).toBe(true);
    expect(
      sameEvent(ev(1, 'note', { a: 1, b: [1, { c: 2 }] }), ev(1, 'note', { b: [1, { c: 2 }], a: 1 })),
    ).toBe(true);
  });

  it('is false when seq, type, time or data differ', () => {
    expect(sameEvent(ev(1), ev(2, 'note', { seq: 1 }))).toBe(false);
    expect(sameEvent(ev(1), ev(1, 'other'))).toBe(false);
    expect(sameEvent(ev(1), { ...ev(1), time: '2026-11-29T10:00:00.001Z' })).toBe(false);
    expect(sameEvent(ev(1), ev(1, 'note', { seq: 1, more: true }))).toBe(false);
    expect(sameEvent(ev(1, 'note', [1, 2]), ev(1, 'note', [2, 1]))).toBe(false);
    expect(sameEvent(ev(1, 'note', null), ev(1, 'note', {}))).toBe(false);
  });
});

describe('assertStoredAfter', () => {
  const after = prepareEvent(ev(4), 'options.after');

  it('passes when the stored event is after', () => {
    expect(() => assertStoredAfter('s', ev(4), after)).not.toThrow();
  });

  it('a different stored event is CONFLICT naming the session and seq, saying nothing was written', () => {
    const error = thrown(() => assertStoredAfter('s1', ev(4, 'other'), after));
    expect(error.code).toBe('CONFLICT');
    expect(error.sessionId).toBe('s1');
    expect(error.location).toEqual({ seq: 4 });
    expect(error.message).toContain('session s1');
    expect(error.message).toContain('seq 4');
    expect(error.message).toContain('no longer the one stored');
    expect(error.message).toContain('nothing was written');
    expect(error.retryable).toBe(false);
  });

  it('no stored event at that seq is CONFLICT too, with its own message', () => {
    const error = thrown(() => assertStoredAfter('s2', undefined, after));
    expect(error.code).toBe('CONFLICT');
    expect(error.sessionId).toBe('s2');
    expect(error.location).toEqual({ seq: 4 });
    expect(error.message).toContain('holds no event at seq 4');
    expect(error.message).toContain('nothing was written');
  });
});

/** A SessionStore as one written before capabilities existed: every method, no `capabilities`. */
function plainStore(): SessionStore {
  const never = () => Promise.reject(new Error('not called'));
  return {
    create: never,
    append: never,
    load: never,
    read: () => ({ [Symbol.asyncIterator]: () => ({ next: never }) }),
    list: never,
    has: never,
    update: never,
    delete: never,
    close: never,
  };
}

describe('checksAppendAfter', () => {
  it('is false for a store without capabilities, or whose appendAfter is not true', () => {
    const plain = plainStore();
    expect(checksAppendAfter(plain)).toBe(false);
    expect(checksAppendAfter({ ...plain, capabilities: { appendAfter: false } })).toBe(false);
    const loose = { ...plain, capabilities: { appendAfter: 'yes' } } as unknown as SessionStore;
    expect(checksAppendAfter(loose)).toBe(false);
  });

  it('is true for a store that says it checks after', () => {
    expect(checksAppendAfter({ ...plainStore(), capabilities: { appendAfter: true } })).toBe(true);
  });

  it('is true for a class whose instances declare it, and for a wrapper that declares it with its append', () => {
    // As a backend class: methods on the prototype, `capabilities` a field of the instance.
    const store = Object.assign(Object.create(plainStore()) as SessionStore, {
      capabilities: { appendAfter: true },
    });
    expect(checksAppendAfter(store)).toBe(true);
    // Inheriting both from the store: the append is the store's own.
    expect(checksAppendAfter(Object.create(store) as SessionStore)).toBe(true);
    const forwarding = Object.assign(Object.create(store) as SessionStore, {
      append: (id: string, events: readonly SessionEvent[], options?: AppendOptions) =>
        store.append(id, events, options),
      capabilities: { appendAfter: true },
    });
    expect(checksAppendAfter(forwarding)).toBe(true);
  });

  it('is false for a wrapper whose own append only inherits the capability', () => {
    const store = { ...plainStore(), capabilities: { appendAfter: true } };
    // Drops the options: inheriting `capabilities` must not let callers skip their read.
    const dropping = Object.assign(Object.create(store) as SessionStore, {
      append: (id: string, events: readonly SessionEvent[]) => store.append(id, events),
    });
    expect(checksAppendAfter(dropping)).toBe(false);
  });
});
