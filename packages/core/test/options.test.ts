// resolveStoreOptions: the options every backend shares, validated once, errors naming the option.
import { describe, expect, it } from 'vitest';
import {
  backendOptionNames,
  DEFAULT_BOUNDARY_TYPES,
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_EVENT_BYTES,
  resolveStoreOptions,
  type StoreOptions,
} from '../src/index.js';

function invalidMessage(options: unknown, backendNames?: readonly string[]): string {
  try {
    resolveStoreOptions(options as never, 'openTestStore', backendNames);
  } catch (error) {
    expect((error as { code?: string }).code).toBe('INVALID');
    return (error as Error).message;
  }
  throw new Error('expected INVALID');
}

describe('resolveStoreOptions', () => {
  it('fills in every default', () => {
    const resolved = resolveStoreOptions({}, 'openTestStore');
    expect(resolved.durability).toBe('strict');
    expect(resolved.boundaryTypes).toEqual(DEFAULT_BOUNDARY_TYPES);
    expect(resolved.limits).toEqual({ maxEventBytes: DEFAULT_MAX_EVENT_BYTES, maxDepth: DEFAULT_MAX_DEPTH });
    expect(resolved.isBoundary({ type: 'turn/end' })).toBe(true);
    expect(resolved.isBoundary({ type: 'note' })).toBe(false);
  });

  it('keeps valid values and copies the boundary types', () => {
    const types = ['done'];
    const resolved = resolveStoreOptions(
      { durability: 'relaxed', boundaryTypes: types, maxEventBytes: 1024, maxDepth: 8 },
      'openTestStore',
    );
    types.push('later');
    expect(resolved.durability).toBe('relaxed');
    expect(resolved.boundaryTypes).toEqual(['done']);
    expect(resolved.isBoundary({ type: 'later' })).toBe(false);
    expect(resolved.limits).toEqual({ maxEventBytes: 1024, maxDepth: 8 });
  });

  it.each([
    [{ durability: 'fast' }, 'durability'],
    [{ boundaryTypes: 'turn/end' }, 'boundaryTypes'],
    [{ boundaryTypes: ['ok', ''] }, 'boundaryTypes[1]'],
    [{ boundaryTypes: [3] }, 'boundaryTypes[0]'],
    [{ boundaryTypes: ['\ud800'] }, 'boundaryTypes[0]'],
    [{ maxEventBytes: 0 }, 'maxEventBytes'],
    [{ maxEventBytes: 1.5 }, 'maxEventBytes'],
    [{ maxEventBytes: DEFAULT_MAX_EVENT_BYTES + 1 }, 'maxEventBytes'],
    [{ maxDepth: -1 }, 'maxDepth'],
    [{ maxDepth: '3' }, 'maxDepth'],
  ])('rejects %j with INVALID naming %s and the factory', (options, name) => {
    const message = invalidMessage(options);
    expect(message).toContain('openTestStore');
    expect(message).toContain(name);
  });

  it('rejects options that are not an object', () => {
    expect(invalidMessage(null)).toContain('options must be an object');
    expect(invalidMessage('relaxed')).toContain('options must be an object');
  });
});

describe('unknown option names', () => {
  const names = backendOptionNames<StoreOptions & { root?: string; lock?: 'file' | 'none' }>({
    root: true,
    lock: true,
  });

  it('lists the backend names it was given', () => {
    expect(names).toEqual(['root', 'lock']);
    expect(Object.isFrozen(names)).toBe(true);
  });

  it('refuses a name neither shared nor the backend own, naming it and the known ones', () => {
    expect(() => resolveStoreOptions({ dir: '/tmp/x' } as never, 'openTestStore', names)).toThrow(
      'openTestStore: unknown option "dir" (known options: root, lock, durability, boundaryTypes, maxEventBytes, maxDepth)',
    );
    expect(invalidMessage({ root: '/r', durabilty: 'relaxed' }, names)).toContain('"durabilty"');
  });

  it('accepts shared and backend names, also when their value is undefined', () => {
    const resolved = resolveStoreOptions(
      { root: '/r', lock: undefined, durability: 'relaxed', maxDepth: 4 } as never,
      'openTestStore',
      names,
    );
    expect(resolved.durability).toBe('relaxed');
    expect(resolveStoreOptions({}, 'openTestStore', []).durability).toBe('strict');
    expect(() => resolveStoreOptions({ root: '/r' } as never, 'openTestStore', [])).toThrow('"root"');
  });

  it('leaves names alone when the caller gives no backend names', () => {
    expect(resolveStoreOptions({ anything: 1 } as never, 'openTestStore').durability).toBe('strict');
  });
});
