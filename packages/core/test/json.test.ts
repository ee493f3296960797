import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assertJsonValue,
  cloneJson,
  copyJsonValue,
  isJsonValue,
  isTidemarkError,
  type JsonValue,
  jsonEqual,
} from '../src/index.js';

function rejection(value: unknown, path = 'data', maxDepth?: number): string {
  try {
    assertJsonValue(value, path, maxDepth === undefined ? {} : { maxDepth });
  } catch (error) {
    expect(isTidemarkError(error, 'INVALID')).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected a rejection');
}

describe('assertJsonValue', () => {
  it('accepts plain JSON, including prototype-named keys as ordinary data', () => {
    const value = JSON.parse(
      '{"a":[1,"x",null,true,{"b":-1.5}],"__proto__":{"polluted":true},"constructor":1,"prototype":2}',
    );
    expect(isJsonValue(value)).toBe(true);
    expect(isJsonValue(Object.create(null))).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['BigInt', { items: [1, 2n] }, 'data.items[1]: BigInt'],
    ['undefined', { a: undefined }, 'data.a: undefined'],
    ['NaN', [Number.NaN], 'data[0]: NaN'],
    ['Infinity', { x: Number.POSITIVE_INFINITY }, 'data.x: Infinity'],
    ['-Infinity', { x: Number.NEGATIVE_INFINITY }, 'data.x: -Infinity'],
    ['-0', { x: -0 }, 'data.x: -0'],
    ['function', { f: () => 1 }, 'data.f: function'],
    ['symbol', { s: Symbol('s') }, 'data.s: symbol'],
    ['Map', { m: new Map() }, 'data.m: Map'],
    ['Set', { m: new Set() }, 'data.m: Set'],
    ['Date', { d: new Date(0) }, 'data.d: Date'],
    ['RegExp', { r: /x/ }, 'data.r: RegExp'],
    ['typed array', { t: new Uint8Array(2) }, 'data.t: Uint8Array'],
    ['class instance', { c: new (class Point {})() }, 'data.c: Point'],
    ['odd key path', { 'a b': [0n] }, 'data["a b"][0]: BigInt'],
  ])('rejects %s and names the path', (_name, value, expected) => {
    expect(rejection(value)).toContain(expected);
  });

  it('rejects symbol keys, sparse arrays, extra array properties, accessors and hidden properties', () => {
    expect(rejection({ [Symbol('k')]: 1 })).toContain('symbol key');
    // biome-ignore lint/suspicious/noSparseArray: the point of the test.
    expect(rejection([1, , 3])).toContain('data[1]: hole in sparse array');
    const extra: unknown[] & { extra?: number } = [1];
    extra.extra = 2;
    expect(rejection(extra)).toContain('extra properties');
    expect(
      rejection({
        get g() {
          return 1;
        },
      }),
    ).toContain('data.g: accessor');
    expect(rejection(Object.defineProperty({}, 'h', { value: 1, enumerable: false }))).toContain(
      'data.h: non-enumerable',
    );
  });

  it('rejects circular references but accepts shared (acyclic) references', () => {
    const loop: Record<string, unknown> = { a: {} };
    (loop.a as Record<string, unknown>).back = loop;
    expect(rejection(loop)).toContain('data.a.back: circular reference');
    const shared = { n: 1 };
    expect(isJsonValue({ x: shared, y: [shared, shared] })).toBe(true);
  });

  it('rejects nesting past the limit without overflowing the stack (100,000 deep)', () => {
    let deep: unknown = 0;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(rejection(deep)).toContain('nested deeper than 256 levels');
    let justRight: unknown = 0;
    for (let i = 0; i < 256; i++) justRight = [justRight];
    expect(isJsonValue(justRight)).toBe(true);
    expect(isJsonValue([justRight])).toBe(false);
    expect(rejection([[[1]]], 'data', 2)).toContain('nested deeper than 2 levels');
  });

  it('accepts exactly what survives a JSON round trip (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(isJsonValue(value)).toBe(!containsNegativeZero(value));
        if (isJsonValue(value)) expect(JSON.parse(JSON.stringify(value))).toStrictEqual(value);
      }),
    );
  });
});

function containsNegativeZero(value: unknown): boolean {
  if (Object.is(value, -0)) return true;
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).some(containsNegativeZero);
}

describe('jsonEqual and cloneJson', () => {
  it('compares structurally, ignoring key order', () => {
    expect(jsonEqual({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual({ a: [] }, { a: {} })).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
  });

  it('agrees with a serialization comparison (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        const x = cloneJson(a as JsonValue);
        expect(jsonEqual(x, cloneJson(x))).toBe(true);
        if (JSON.stringify(a) === JSON.stringify(b))
          expect(jsonEqual(a as JsonValue, b as JsonValue)).toBe(true);
      }),
    );
  });

  it('keeps __proto__ as an own data key in copies', () => {
    const copy = cloneJson(JSON.parse('{"__proto__":{"x":1}}') as JsonValue) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.hasOwn(copy, '__proto__')).toBe(true);
    expect((copy as { x?: number }).x).toBeUndefined();
  });
});

describe('copyJsonValue', () => {
  /** Every object and array of `value`, to check that a copy shares none of them. */
  function containers(value: unknown, into = new Set<object>()): Set<object> {
    if (typeof value === 'object' && value !== null) {
      into.add(value);
      for (const child of Object.values(value)) containers(child, into);
    }
    return into;
  }

  /** The value with every object's own keys listed in order, so that key order is compared too. */
  function shape(value: unknown): unknown {
    if (typeof value !== 'object' || value === null) return value;
    if (Array.isArray(value))
      return ['array', Object.getPrototypeOf(value) === Array.prototype, value.map(shape)];
    return [
      'object',
      Object.getPrototypeOf(value) === Object.prototype,
      Reflect.ownKeys(value).map((key) => [key, shape((value as Record<string, unknown>)[key as string])]),
    ];
  }

  // Keys that an object literal or an assignment treats specially, and integer-like keys, which
  // objects list before the others whatever the order they were added in.
  const key = fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', '0', '10', '2', '01', '-1'));
  const json = fc
    .letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.oneof(
          fc.string(),
          fc.boolean(),
          fc.constant(null),
          fc.double({ noNaN: true, noDefaultInfinity: true }),
        ),
        fc.array(tie('value'), { maxLength: 4 }),
        fc
          .array(fc.tuple(key, tie('value')), { maxLength: 5 })
          .map((entries) =>
            JSON.parse(`{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`),
          ),
      ),
    }))
    .value.filter((value) => !containsNegativeZero(value));

  it('gives what a JSON round trip gives, keys in the same order, sharing nothing (property)', () => {
    fc.assert(
      fc.property(json, (value) => {
        const copy = copyJsonValue(value, 'data');
        expect(shape(copy)).toEqual(shape(JSON.parse(JSON.stringify(value))));
        expect(JSON.stringify(copy)).toBe(JSON.stringify(value));
        const originals = containers(value);
        for (const part of containers(copy)) expect(originals.has(part)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps __proto__ an own data key and leaves the prototype alone', () => {
    const copy = copyJsonValue(JSON.parse('{"__proto__":{"polluted":1},"a":[{"__proto__":null}]}')) as {
      a: object[];
    };
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.hasOwn(copy, '__proto__')).toBe(true);
    expect((copy as { polluted?: number }).polluted).toBeUndefined();
    expect(Object.hasOwn(copy.a[0]!, '__proto__')).toBe(true);
    // Writable, enumerable and configurable, as the key JSON.parse defines.
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')).toEqual(
      Object.getOwnPropertyDescriptor(JSON.parse('{"__proto__":{"polluted":1}}'), '__proto__'),
    );
    expect(({} as { polluted?: number }).polluted).toBeUndefined();
  });

  it('copies a value shared at two places twice, as JSON does, and still refuses a cycle', () => {
    const shared = { n: 1 };
    const copy = copyJsonValue({ a: shared, b: [shared] }) as { a: object; b: object[] };
    expect(copy.a).toEqual({ n: 1 });
    expect(copy.a).not.toBe(copy.b[0]);
    const cycle: Record<string, unknown> = { x: 1 };
    cycle.self = { back: cycle };
    expect(() => copyJsonValue(cycle, 'data')).toThrow('data.self.back: circular reference');
  });

  it('refuses what assertJsonValue refuses, with the same message', () => {
    const sparse = [1, 2, 3];
    delete sparse[1];
    for (const bad of [{ a: [1, 2n] }, { a: { b: undefined } }, sparse, { d: new Date(0) }, { n: -0 }]) {
      expect(() => copyJsonValue(bad, 'data')).toThrow(rejection(bad));
    }
  });

  it('names paths from the value itself when given no path', () => {
    expect(() => copyJsonValue({ a: [1, undefined] })).toThrow(/^a\[1\]: undefined$/);
  });

  it('copies a scalar root as itself, and a value nested to the limit', () => {
    expect(copyJsonValue('text')).toBe('text');
    expect(copyJsonValue(null)).toBeNull();
    let deep: JsonValue = 1;
    for (let i = 0; i < 200; i++) deep = [deep];
    expect(JSON.stringify(copyJsonValue(deep, 'data', { maxDepth: 200 }))).toBe(JSON.stringify(deep));
    expect(() => copyJsonValue([deep], 'data', { maxDepth: 200 })).toThrow('nested deeper than 200 levels');
  });
});
