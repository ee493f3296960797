import { describe, expect, it } from 'vitest';
import { type Clone, classifyClones, isGatedPair, packageOf } from '../src/copies.js';

const clone = (a: string, b: string): Clone => ({
  lines: 8,
  firstFile: { name: a, start: 1, end: 8 },
  secondFile: { name: b, start: 10, end: 17 },
});

describe('copies between packages', () => {
  it('knows the package of a repository path', () => {
    expect(packageOf('packages/jsonl/src/store.ts')).toBe('jsonl');
    expect(packageOf('/abs/repo/packages/sqlite/src/a.ts')).toBe('sqlite');
    expect(packageOf('tooling/x/src/a.ts')).toBeUndefined();
  });

  it('gates backend with backend, and backend with cli or lifecycle, in either order', () => {
    expect(isGatedPair('jsonl', 'sqlite')).toBe(true);
    expect(isGatedPair('memory', 'postgres')).toBe(true);
    expect(isGatedPair('cli', 'jsonl')).toBe(true);
    expect(isGatedPair('sqlite', 'lifecycle')).toBe(true);
  });

  it('does not gate a repeat inside one package, or one with core or a test kit', () => {
    expect(isGatedPair('jsonl', 'jsonl')).toBe(false);
    expect(isGatedPair('core', 'jsonl')).toBe(false);
    expect(isGatedPair('faults', 'sqlite')).toBe(false);
    expect(isGatedPair('contract', 'memory')).toBe(false);
    expect(isGatedPair('cli', 'lifecycle')).toBe(false);
  });

  it('splits jscpd duplicates into gated and not gated', () => {
    const { gated, other } = classifyClones([
      clone('packages/memory/src/store.ts', 'packages/sqlite/src/store.ts'),
      clone('packages/jsonl/src/recovery.ts', 'packages/jsonl/src/recovery.ts'),
      clone('packages/core/src/fs-port.ts', 'packages/faults/src/memfs-fs.ts'),
    ]);
    expect(gated.map((c) => c.firstFile.name)).toEqual(['packages/memory/src/store.ts']);
    expect(other).toHaveLength(2);
  });
});
