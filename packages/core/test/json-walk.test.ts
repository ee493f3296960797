// The fast walk behind copyJsonValue and assertJsonValue against the iterative walk it falls back
// on (the reference, kept in json-walk.ts): on arbitrary values, hostile ones included, both give
// the same copy (same keys in the same order, same descriptors, nothing shared with the input) or
// the same error, and neither ever runs a getter.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertJsonValue, copyJsonValue } from '../src/index.js';
import { FAST_WALK_DEPTH, walkJsonIterative } from '../src/json-walk.js';

/** How a value is built: a tree of these, turned into a value by {@link build}. */
type Recipe =
  | { kind: 'scalar'; value: unknown }
  | { kind: 'array'; items: Recipe[]; twist: (typeof ARRAY_TWISTS)[number] }
  | { kind: 'object'; entries: Array<[string, Recipe]>; twist: (typeof OBJECT_TWISTS)[number] }
  | { kind: 'proxy'; of: Recipe; trap: (typeof PROXY_TRAPS)[number] }
  | { kind: 'special'; which: (typeof SPECIALS)[number] }
  /** A container on the branch above (a cycle), `up` levels up (modulo how many there are). */
  | { kind: 'cycle'; up: number }
  /** A value built earlier at another place (shared, not a cycle). */
  | { kind: 'shared'; index: number }
  /** `of` inside `levels` arrays, around the fast walk's depth bound and the limits. */
  | { kind: 'deep'; levels: number; of: Recipe };

const ARRAY_TWISTS = [
  'none',
  'none',
  'none',
  'hole',
  'extra',
  'hidden-extra',
  'symbol',
  'getter',
  'hidden-item',
  'frozen',
  'subclass',
  'null-proto',
] as const;
const OBJECT_TWISTS = [
  'none',
  'none',
  'none',
  'null-proto',
  'getter',
  'setter-only',
  'empty-accessor',
  'hidden',
  'symbol',
  'hidden-symbol',
  'frozen',
  'class',
] as const;
const PROXY_TRAPS = ['forward', 'lying-get', 'lying-descriptor', 'throwing-keys'] as const;
const SPECIALS = ['date', 'map', 'bytes', 'boxed', 'regexp', 'class', 'foreign-array'] as const;

/** Keys an assignment or an object literal treats specially, integer-like keys, and any string. */
const key = fc.oneof(
  fc.constantFrom('a', 'b', 'c', '__proto__', 'constructor', 'toString', '0', '1', '10', '01', '-1', 'a b'),
  fc.string({ maxLength: 4 }),
);
const scalar = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.oneof(fc.string({ maxLength: 6 }), fc.boolean(), fc.constant(null), fc.integer()),
  },
  { weight: 2, arbitrary: fc.double() }, // -0, NaN and ±Infinity included
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(undefined, 1n, Symbol('s'), () => 1, -0, Number.NaN),
  },
);

const { recipe } = fc.letrec<{ recipe: Recipe }>((tie) => ({
  recipe: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 5, arbitrary: scalar.map((value): Recipe => ({ kind: 'scalar', value })) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('array' as const),
        items: fc.array(tie('recipe'), { maxLength: 4 }),
        twist: fc.constantFrom(...ARRAY_TWISTS),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('object' as const),
        entries: fc.array(fc.tuple(key, tie('recipe')), { maxLength: 4 }),
        twist: fc.constantFrom(...OBJECT_TWISTS),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('proxy' as const),
        of: tie('recipe'),
        trap: fc.constantFrom(...PROXY_TRAPS),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('special' as const), which: fc.constantFrom(...SPECIALS) }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('cycle' as const), up: fc.nat(5) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('shared' as const), index: fc.nat(20) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('deep' as const),
        levels: fc.constantFrom(1, 2, FAST_WALK_DEPTH - 1, FAST_WALK_DEPTH, FAST_WALK_DEPTH + 1, 200, 260),
        of: tie('recipe'),
      }),
    },
  ),
}));

/** Counts getter calls: a walk must never run one. */
let gettersRun = 0;
const getter = () => {
  gettersRun++;
  return 1;
};

class Point {
  x = 1;
}
class List extends Array {}

/** Builds the value a recipe describes; `above` holds the containers on the branch, `built` all so far. */
function build(recipe: Recipe, above: object[] = [], built: unknown[] = []): unknown {
  let value: unknown;
  switch (recipe.kind) {
    case 'scalar':
      return recipe.value;
    case 'cycle':
      return above.length === 0 ? null : above[above.length - 1 - (recipe.up % above.length)];
    case 'shared':
      return built.length === 0 ? 'nothing yet' : built[recipe.index % built.length];
    case 'special':
      return special(recipe.which);
    case 'deep': {
      const outer: unknown[] = [];
      let at = outer;
      for (let i = 1; i < recipe.levels; i++) {
        const inner: unknown[] = [];
        at.push(inner);
        at = inner;
      }
      at.push(build(recipe.of, [...above, outer], built));
      value = outer;
      break;
    }
    case 'proxy':
      value = proxyOf(build(recipe.of, above, built), recipe.trap);
      break;
    case 'array': {
      const array: unknown[] = [];
      for (const item of recipe.items) array.push(build(item, [...above, array], built));
      value = twistArray(array, recipe.twist);
      break;
    }
    case 'object': {
      const object: Record<string, unknown> = {};
      for (const [k, item] of recipe.entries) {
        // An own data key whatever its name (`__proto__` included), as JSON.parse defines it.
        Object.defineProperty(object, k, {
          value: build(item, [...above, object], built),
          writable: true,
          enumerable: true,
          configurable: true,
        });
      }
      value = twistObject(object, recipe.twist);
      break;
    }
  }
  built.push(value);
  return value;
}

function special(which: (typeof SPECIALS)[number]): unknown {
  switch (which) {
    case 'date':
      return new Date(0);
    case 'map':
      return new Map([[1, 2]]);
    case 'bytes':
      return new Uint8Array(2);
    case 'boxed':
      return Object('text');
    case 'regexp':
      return /x/;
    case 'class':
      return new Point();
    case 'foreign-array':
      // An array whose prototype is plain: Array.isArray, but not an Array.prototype array.
      return Object.setPrototypeOf([1], Object.prototype);
  }
}

function proxyOf(target: unknown, trap: (typeof PROXY_TRAPS)[number]): unknown {
  if (typeof target !== 'object' || target === null) return target;
  const handler: ProxyHandler<object> = {};
  if (trap === 'lying-get') handler.get = () => 'lie';
  if (trap === 'lying-descriptor')
    handler.getOwnPropertyDescriptor = (t, k) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(t, k);
      return descriptor && 'value' in descriptor && descriptor.configurable
        ? { ...descriptor, value: 'lie' }
        : descriptor;
    };
  if (trap === 'throwing-keys')
    handler.ownKeys = () => {
      throw new TypeError('no keys here');
    };
  return new Proxy(target, handler);
}

function twistArray(array: unknown[], twist: (typeof ARRAY_TWISTS)[number]): unknown[] {
  switch (twist) {
    case 'none':
      return array;
    case 'hole':
      array.length += 1; // a hole at the end
      if (array.length > 2) delete array[0];
      return array;
    case 'extra':
      return Object.assign(array, { extra: 1 });
    case 'hidden-extra':
      return Object.defineProperty(array, 'hidden', { value: 1, enumerable: false });
    case 'symbol':
      return Object.assign(array, { [Symbol('k')]: 1 });
    case 'getter':
      return Object.defineProperty(array, array.length, {
        get: getter,
        enumerable: true,
        configurable: true,
      });
    case 'hidden-item':
      // A non-enumerable element is still data that JSON keeps: both walks accept it.
      return Object.defineProperty(array, array.length, { value: 2, writable: true, enumerable: false });
    case 'frozen':
      Object.freeze(array);
      return array;
    case 'subclass':
      return Object.setPrototypeOf(array, List.prototype);
    case 'null-proto':
      return Object.setPrototypeOf(array, null);
  }
}

function twistObject(object: Record<string, unknown>, twist: (typeof OBJECT_TWISTS)[number]): object {
  switch (twist) {
    case 'none':
      return object;
    case 'null-proto':
      return Object.setPrototypeOf(object, null);
    case 'getter':
      return Object.defineProperty(object, 'g', { get: getter, enumerable: true, configurable: true });
    case 'setter-only':
      return Object.defineProperty(object, 's', { set: () => {}, enumerable: true, configurable: true });
    case 'empty-accessor':
      return Object.defineProperty(object, 'e', { get: undefined, enumerable: true, configurable: true });
    case 'hidden':
      return Object.defineProperty(object, 'h', { value: 1, enumerable: false });
    case 'symbol':
      return Object.assign(object, { [Symbol('k')]: 1 });
    case 'hidden-symbol':
      return Object.defineProperty(object, Symbol('k'), { value: 1, enumerable: false });
    case 'frozen':
      return Object.freeze(object);
    case 'class':
      return Object.setPrototypeOf(object, Point.prototype);
  }
}

/** A value's full shape: prototypes, every own key in order with its descriptor, recursively. */
function shape(value: unknown, above: object[] = []): unknown {
  if (typeof value !== 'object' || value === null) return Object.is(value, -0) ? '-0' : value;
  if (above.includes(value)) return 'cycle';
  const proto = Object.getPrototypeOf(value);
  return [
    Array.isArray(value) ? 'array' : 'object',
    proto === Array.prototype ? 'Array.prototype' : proto === Object.prototype ? 'Object.prototype' : proto,
    Reflect.ownKeys(value).map((k) => {
      const { value: inner, ...rest } = Reflect.getOwnPropertyDescriptor(value, k)!;
      return [k, rest, shape(inner, [...above, value])];
    }),
  ];
}

/** Every object and array reachable from a value (proxies looked through as they answer). */
function containers(value: unknown, into = new Set<object>()): Set<object> {
  if (typeof value === 'object' && value !== null && !into.has(value)) {
    into.add(value);
    for (const k of Reflect.ownKeys(value))
      containers(Reflect.getOwnPropertyDescriptor(value, k)?.value, into);
  }
  return into;
}

/** What a walk gives: the copy's shape, or the error's class, code and message. */
function outcome(walk: () => unknown): unknown {
  try {
    return { copy: shape(walk()) };
  } catch (error) {
    const { name, message, code } = error as Error & { code?: string };
    return { error: [name, code, message] };
  }
}

const maxDepth = fc.constantFrom(
  undefined,
  0,
  1,
  3,
  FAST_WALK_DEPTH - 1,
  FAST_WALK_DEPTH,
  100,
  256,
  Number.NaN,
);

describe('the fast walk against the iterative walk', () => {
  it('gives the same copy or the same error on arbitrary values, hostile ones included (property)', () => {
    fc.assert(
      fc.property(recipe, maxDepth, (r, depth) => {
        const value = build(r);
        const limits = depth === undefined ? {} : { maxDepth: depth };
        const reference = depth ?? 256;
        gettersRun = 0;
        const copied = outcome(() => copyJsonValue(value, 'data', limits));
        expect(copied).toEqual(outcome(() => walkJsonIterative(value, 'data', reference, true)));
        expect(outcome(() => assertJsonValue(value, 'data', limits))).toEqual(
          outcome(() => walkJsonIterative(value, 'data', reference, false)),
        );
        expect(gettersRun).toBe(0);
        if ('copy' in (copied as object)) {
          const originals = containers(value);
          for (const part of containers(copyJsonValue(value, 'data', limits)))
            expect(originals.has(part)).toBe(false);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('copies values nested past its depth bound through the iterative walk, up to any limit', () => {
    let deep: unknown = { leaf: [1, 'x'] };
    for (let i = 0; i < 10_000; i++) deep = i % 2 === 0 ? [deep] : { k: deep };
    for (const limits of [{ maxDepth: Number.POSITIVE_INFINITY }, { maxDepth: Number.NaN }]) {
      let copy = copyJsonValue(deep, 'data', limits) as unknown;
      let original = deep;
      let shared = 0;
      for (let i = 0; i < 10_000; i++) {
        // (Not `expect().not.toBe`: on two distinct values it compares them deeply, recursively.)
        if (copy === original) shared++;
        const at: string | number = Array.isArray(original) ? 0 : 'k';
        copy = (copy as Record<string | number, unknown>)[at];
        original = (original as Record<string | number, unknown>)[at];
      }
      expect(shared).toBe(0);
      expect(copy).toEqual({ leaf: [1, 'x'] });
    }
    expect(() => copyJsonValue(deep, 'data')).toThrow('nested deeper than 256 levels');
  });

  it('names the same path as the iterative walk for a failure just past its depth bound', () => {
    let deep: unknown = { items: [1, 2n] };
    for (let i = 0; i < FAST_WALK_DEPTH + 2; i++) deep = { [`k${i % 3}`]: deep };
    const expected = outcome(() => walkJsonIterative(deep, 'events[3].data', 256, true));
    expect(outcome(() => copyJsonValue(deep, 'events[3].data'))).toEqual(expected);
    expect(JSON.stringify(expected)).toContain('.items[1]: BigInt');
  });
});
