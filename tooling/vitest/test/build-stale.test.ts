import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildStalePackages, isStale } from '../index.js';
import { INDEX_EXPORTS, writeTinyPackage } from './tiny-packages.js';

const root = mkdtempSync(join(tmpdir(), 'tidemark-build-stale-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A one-file package with a tsconfig.build.json that emits dist/index.js. */
function tinyPackage(name: string): string {
  const dir = join(root, name);
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(join(dir, 'src', 'index.ts'), 'export const answer: number = 42;\n');
  writeFileSync(
    join(dir, 'tsconfig.build.json'),
    JSON.stringify({
      compilerOptions: { outDir: 'dist', rootDir: 'src', module: 'es2022', target: 'es2022' },
      include: ['src'],
    }),
  );
  return dir;
}

// Each case runs tsc (twice in the first); 36 s were seen on a loaded two-core machine, so the
// hang guard is wider than the 30 s default. It bounds a hang, it does not time anything.
const TSC_RUNS_TIMEOUT_MS = 180_000;

describe('buildStalePackages', { timeout: TSC_RUNS_TIMEOUT_MS }, () => {
  it('builds a package without dist, then leaves it alone until a source is newer', () => {
    const pkg = tinyPackage('a');
    expect(isStale(pkg)).toBe(true);
    expect(buildStalePackages(import.meta.url, [pkg])).toEqual([pkg]);
    expect(existsSync(join(pkg, 'dist', 'index.js'))).toBe(true);
    expect(isStale(pkg)).toBe(false);
    expect(buildStalePackages(import.meta.url, [pkg])).toEqual([]);

    const later = new Date(Date.now() + 60_000);
    utimesSync(join(pkg, 'src', 'index.ts'), later, later);
    expect(isStale(pkg)).toBe(true);
    expect(buildStalePackages(import.meta.url, [pkg])).toEqual([pkg]);
  });

  it('resolves package paths against the directory of `from`', () => {
    const pkg = tinyPackage('b');
    // Need not exist: only its directory counts (and TypeScript resolves from there).
    const from = fileURLToPath(new URL('./nested/global-setup.ts', import.meta.url));
    expect(buildStalePackages(from, [relative(dirname(from), pkg)])).toEqual([pkg]);
  });

  it("bundles after tsc when the package's build does, with the build's arguments", () => {
    const pkg = writeTinyPackage(
      join(root, 'd'),
      {
        'index.ts': "export { answer } from './answer.js';\n",
        'answer.ts': 'export const answer: number = 42;\n',
        'extra.ts': "export { answer as extra } from './answer.js';\n",
      },
      {
        name: 'd',
        ...INDEX_EXPORTS,
        scripts: { build: 'tsc -p tsconfig.build.json && node ../../tooling/bundle.mjs extra.js' },
      },
    );
    expect(buildStalePackages(import.meta.url, [pkg])).toEqual([pkg]);
    // The entry and the named file are bundles; the module they share is no file of its own.
    expect(existsSync(join(pkg, 'dist', 'index.js'))).toBe(true);
    expect(existsSync(join(pkg, 'dist', 'extra.js'))).toBe(true);
    expect(existsSync(join(pkg, 'dist', 'answer.js'))).toBe(false);
    expect(existsSync(join(pkg, 'dist', 'answer.d.ts'))).toBe(true);
  });

  it('throws when a build fails, instead of leaving the tests to run stale code', () => {
    const pkg = tinyPackage('c');
    writeFileSync(join(pkg, 'src', 'index.ts'), 'export const answer: number = "not a number";\n');
    expect(() => buildStalePackages(import.meta.url, [pkg])).toThrow();
  });
});
