// The two walks behind `assertJsonValue` and `copyJsonValue` (json.ts). The iterative walk is the
// reference: it decides every value and spells every error. The fast walk is a recursive one for
// what appends carry (ordinary objects and arrays a few levels deep): it either returns exactly the
// copy the iterative walk would build, or says UNSURE, and json.ts then runs the iterative walk.
// Most of the fast walk's time goes to reads that exactness needs, not to the walk: a descriptor per
// key (nothing cheaper tells a data property from an accessor without running it) and the symbol
// keys of each object.
import { types } from 'node:util';
import { TidemarkError } from './errors.js';

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Appends a property key to a path in the `a.b[2]["odd key"]` notation used by error messages. */
export function pathWithKey(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  if (IDENTIFIER.test(key)) return path === '' ? key : `${path}.${key}`;
  return `${path}[${JSON.stringify(key)}]`;
}

/** Describes why a value is not JSON, or returns undefined when its own shape is acceptable. */
function describeNonJson(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      if (!Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : String(value);
      if (Object.is(value, -0)) return '-0 (JSON turns negative zero into 0)';
      return undefined;
    case 'bigint':
      return 'BigInt';
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'function';
    case 'symbol':
      return 'symbol';
    case 'object': {
      if (value === null) return undefined;
      if (Array.isArray(value)) {
        if (Object.getPrototypeOf(value) !== Array.prototype) return 'array subclass';
        return undefined;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
        return typeof name === 'string' && name !== '' ? name : 'non-plain object';
      }
      return undefined;
    }
    default:
      return typeof value;
  }
}

function fail(path: string, what: string): never {
  throw new TidemarkError('INVALID', `${path === '' ? 'value' : path}: ${what}`);
}

/**
 * The reference walk of `assertJsonValue`; with `copying`, also builds and returns the copy. It
 * decides every value {@link walkJsonFast} leaves to it, and spells every error message.
 */
export function walkJsonIterative(value: unknown, path: string, maxDepth: number, copying: boolean): unknown {
  // Each frame: the value, its depth, and where it sits (parent frame and key), from which its
  // path is spelled only when it fails: building every child's path string up front was most of
  // the cost of validating a small event. `onPath` holds the containers on the current branch, to
  // tell a circular reference from a shared (DAG) one, which JSON duplicates harmlessly. A copy is
  // built as frames are taken off the stack: each value is put into the copy of its container
  // (`into`) under its key; children are pushed last to first, so keys are put in their order.
  const root: { value?: unknown } = {};
  const stack: Frame[] = [{ value, depth: 0, rootPath: path, into: root, key: 'value' }];
  const onPath = new Set<object>();
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if (frame.exit !== undefined) {
      onPath.delete(frame.exit);
      continue;
    }
    const current = frame.value;
    const problem = describeNonJson(current);
    if (problem !== undefined) fail(pathOf(frame), problem);
    if (typeof current !== 'object' || current === null) {
      if (copying) put(frame, current);
      continue;
    }
    if (onPath.has(current)) fail(pathOf(frame), 'circular reference');
    if (frame.depth >= maxDepth) fail(pathOf(frame), `nested deeper than ${maxDepth} levels`);
    onPath.add(current);
    stack.push({ value: undefined, depth: frame.depth, exit: current });
    if (Object.getOwnPropertySymbols(current).length > 0) fail(pathOf(frame), 'symbol key');
    const keys = Object.getOwnPropertyNames(current);
    const depth = frame.depth + 1;
    if (Array.isArray(current)) {
      // An array's own names are its indices plus 'length'; anything else does not survive JSON.
      if (keys.length - 1 !== current.length) {
        for (let i = 0; i < current.length; i++)
          if (!(i in current)) fail(pathWithKey(pathOf(frame), i), 'hole in sparse array');
        fail(pathOf(frame), 'array with extra properties');
      }
      const into = copying ? put(frame, []) : undefined;
      for (let i = current.length - 1; i >= 0; i--) {
        const descriptor = Object.getOwnPropertyDescriptor(current, i);
        if (descriptor === undefined) fail(pathWithKey(pathOf(frame), i), 'hole in sparse array');
        if (!('value' in descriptor)) fail(pathWithKey(pathOf(frame), i), 'accessor property');
        stack.push({ value: descriptor.value, depth, parent: frame, key: i, into });
      }
      continue;
    }
    const into = copying ? put(frame, {}) : undefined;
    for (let k = keys.length - 1; k >= 0; k--) {
      const key = keys[k]!;
      const descriptor = Object.getOwnPropertyDescriptor(current, key)!;
      if (!descriptor.enumerable) fail(pathWithKey(pathOf(frame), key), 'non-enumerable property');
      if (!('value' in descriptor)) fail(pathWithKey(pathOf(frame), key), 'accessor property');
      stack.push({ value: descriptor.value, depth, parent: frame, key, into });
    }
  }
  return root.value;
}

/** Puts `copy` into the copy of the frame's container, under the frame's key; returns `copy`. */
function put<T>(frame: Frame, copy: T): T {
  const into = frame.into as Record<string | number, unknown>;
  // Assigning `__proto__` would set the copy's prototype; JSON.parse defines an own key instead.
  if (frame.key === '__proto__')
    Object.defineProperty(into, '__proto__', {
      value: copy,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  else into[frame.key!] = copy;
  return copy;
}

/** A value waiting in `assertJsonValue`'s walk, or (with `exit`) the end of a container. */
interface Frame {
  value: unknown;
  depth: number;
  /** The container holding this value, and its key there; absent for the root. */
  parent?: Frame;
  key?: string | number;
  /** The root's name in messages. */
  rootPath?: string;
  exit?: object;
  /** When copying: the copy of the container, which this value's copy goes into under `key`. */
  into?: object | undefined;
}

/** The path of a frame in the notation of {@link pathWithKey}, spelled from the root down. */
function pathOf(frame: Frame): string {
  const keys: Array<string | number> = [];
  let at = frame;
  while (at.parent !== undefined) {
    keys.push(at.key!);
    at = at.parent;
  }
  let path = at.rootPath ?? '';
  for (let i = keys.length - 1; i >= 0; i--) path = pathWithKey(path, keys[i]!);
  return path;
}

/** What {@link walkJsonFast} returns for a value it leaves to {@link walkJsonIterative}. */
export const UNSURE: unique symbol = Symbol('unsure');

/**
 * The fast walk goes no deeper than this (containers at this depth are left to the iterative
 * walk), which bounds its recursion whatever the limit.
 */
export const FAST_WALK_DEPTH = 64;

/**
 * A recursive walk for what appends carry: the copy {@link walkJsonIterative} would build
 * (undefined when not `copying`), or {@link UNSURE} on anything unusual: a value that walk rejects,
 * a proxy (whose traps could answer differently when asked again), a container at
 * {@link FAST_WALK_DEPTH} or at the limit. It reads with the operations that walk uses (a
 * descriptor per key, never a getter) and keeps the containers of the current branch in
 * `ancestors`, indexed by depth (a short scan instead of a Set). It may throw (a full stack, an
 * assignment refused by a frozen `Object.prototype`); the caller then runs the iterative walk, which
 * meets the same thing in its own order. Keys go into the copy by assignment, as in that walk: a
 * setter planted on `Object.prototype` for a key runs, possibly once here before giving up and again
 * in the iterative walk.
 */
export function walkJsonFast(value: unknown, maxDepth: number, copying: boolean): unknown {
  // The comparison is false for a NaN limit (as for anything not below the bound), which then
  // stays bounded; Math.min would give NaN, under which no depth is too deep.
  // biome-ignore lint/complexity/useMathMinMax: see above.
  const limit = maxDepth < FAST_WALK_DEPTH ? maxDepth : FAST_WALK_DEPTH;
  return fastValue(value, 0, limit, [], copying);
}

function fastValue(
  value: unknown,
  depth: number,
  limit: number,
  ancestors: object[],
  copying: boolean,
): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0) ? value : UNSURE;
    case 'object': {
      if (value === null) return null;
      if (depth >= limit || types.isProxy(value)) return UNSURE;
      for (let i = 0; i < depth; i++) if (ancestors[i] === value) return UNSURE;
      ancestors[depth] = value;
      if (Array.isArray(value)) return fastArray(value, depth + 1, limit, ancestors, copying);
      return fastObject(value, depth + 1, limit, ancestors, copying);
    }
    default:
      return UNSURE;
  }
}

function fastArray(
  value: unknown[],
  depth: number,
  limit: number,
  ancestors: object[],
  copying: boolean,
): unknown {
  if (Object.getPrototypeOf(value) !== Array.prototype) return UNSURE;
  const length = value.length;
  // A real array (not a proxy) lists its indices, 'length', its other names, then its symbols: once
  // every index is found below, a count of one more than `length` leaves room for 'length' alone.
  // One call instead of the iterative walk's two (symbols, then names).
  if (Reflect.ownKeys(value).length !== length + 1) return UNSURE;
  const copy: unknown[] | undefined = copying ? [] : undefined;
  for (let i = 0; i < length; i++) {
    const descriptor = Object.getOwnPropertyDescriptor(value, i);
    if (descriptor === undefined || !('value' in descriptor)) return UNSURE;
    const item = fastValue(descriptor.value, depth, limit, ancestors, copying);
    if (item === UNSURE) return UNSURE;
    if (copy !== undefined) copy[i] = item;
  }
  return copy;
}

function fastObject(
  value: object,
  depth: number,
  limit: number,
  ancestors: object[],
  copying: boolean,
): unknown {
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return UNSURE;
  if (Object.getOwnPropertySymbols(value).length > 0) return UNSURE;
  const keys = Object.getOwnPropertyNames(value);
  const copy: Record<string, unknown> | undefined = copying ? {} : undefined;
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    const descriptor = Object.getOwnPropertyDescriptor(value, key);
    if (descriptor === undefined || !descriptor.enumerable || !('value' in descriptor)) return UNSURE;
    const item = fastValue(descriptor.value, depth, limit, ancestors, copying);
    if (item === UNSURE) return UNSURE;
    if (copy === undefined) continue;
    // As the iterative walk's `put`: an own data key, not the prototype's setter.
    if (key === '__proto__')
      Object.defineProperty(copy, key, { value: item, writable: true, enumerable: true, configurable: true });
    else copy[key] = item;
  }
  return copy;
}
