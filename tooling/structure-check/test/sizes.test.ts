import { describe, expect, it } from 'vitest';
import { countLines, measureSource } from '../src/sizes.js';

/** A function declaration spanning exactly `lines` lines (header and closing brace included). */
function functionOf(
  name: string,
  lines: number,
  body: (i: number) => string = (i) => `  const v${i} = ${i};`,
): string {
  const inner = Array.from({ length: lines - 2 }, (_, i) => body(i));
  return [`function ${name}() {`, ...inner, '}'].join('\n');
}

describe('function size', () => {
  it('passes a function of exactly 80 lines', () => {
    expect(measureSource('f.ts', functionOf('eighty', 80))).toEqual([]);
  });

  it('fails a function of 81 lines and names it with its line', () => {
    const text = `// leading comment\n\n${functionOf('eightyOne', 81)}\n`;
    expect(measureSource('f.ts', text)).toEqual([
      { kind: 'function', file: 'f.ts', line: 3, name: 'eightyOne', lines: 81, limit: 80 },
    ]);
  });

  it('measures a nested function on its own, inside an outer one that is short enough', () => {
    const inner = functionOf('inner', 81)
      .split('\n')
      .map((l) => `  ${l}`);
    const outer = ['function outer() {', ...inner, '  return inner;', '}'].join('\n');
    const found = measureSource('f.ts', outer);
    // The outer function spans 84 lines and the inner 81: both are over.
    expect(found.map((v) => [v.name, v.lines])).toEqual([
      ['outer', 84],
      ['inner', 81],
    ]);
    const shortInner = [
      'function outer() {',
      '  function inner() {',
      '    return 1;',
      '  }',
      '  return inner;',
      '}',
    ];
    expect(measureSource('f.ts', shortInner.join('\n'))).toEqual([]);
  });

  it('finds every kind of function-like node and names it as a reader would', () => {
    const long = (header: string, close = '}') =>
      [header, ...Array.from({ length: 80 }, (_, i) => `    void ${i};`), close].join('\n');
    const text = [
      long('export const arrow = () => {', '};'),
      long('const expr = function () {', '};'),
      long('const named = function inside() {', '};'),
      long('function* gen() {'),
      long('items.forEach((item) => {', '});'),
      'const table = {',
      long('  handler() {', '  },'),
      '};',
      'class Store {',
      long('  constructor() {', '  }'),
      long('  async append() {', '  }'),
      long('  get size() {', '  }'),
      long('  set size(v: number) {', '  }'),
      long('  *rows() {', '  }'),
      long('  #secret = () => {', '  };'),
      '}',
    ].join('\n');
    expect(
      measureSource('f.ts', text, { maxFileLines: 10_000, maxFunctionLines: 80 }).map((v) => v.name),
    ).toEqual([
      'arrow',
      'expr',
      'inside',
      '*gen',
      'items.forEach(…) callback',
      'table.handler',
      'Store.constructor',
      'Store.append',
      'get Store.size',
      'set Store.size',
      '*Store.rows',
      '#secret',
    ]);
  });

  it('ignores overload signatures and interface members, which have no body', () => {
    const text = [
      'function over(a: string): string;',
      'function over(a: number): number;',
      'function over(a: unknown) { return a; }',
      'interface Port { read(): void }',
    ].join('\n');
    expect(measureSource('f.ts', text)).toEqual([]);
  });
});

describe('file size', () => {
  const file = (lines: number) =>
    `${Array.from({ length: lines }, (_, i) => `export const v${i} = ${i};`).join('\n')}\n`;

  it('passes a file of exactly 500 lines', () => {
    expect(countLines(file(500))).toBe(500);
    expect(measureSource('f.ts', file(500))).toEqual([]);
  });

  it('fails a file of 501 lines', () => {
    expect(measureSource('big.ts', file(501))).toEqual([
      { kind: 'file', file: 'big.ts', line: 1, name: 'big.ts', lines: 501, limit: 500 },
    ]);
  });

  it('counts a last line without a final newline', () => {
    expect(countLines('a\nb')).toBe(2);
    expect(countLines('a\nb\n')).toBe(2);
    expect(countLines('')).toBe(0);
  });
});
