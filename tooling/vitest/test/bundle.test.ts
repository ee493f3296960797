// tooling/bundle.mjs, which every package's build runs after tsc: one module per entry point
// (exports, bin, and files started by path), internal modules gone, and a build that fails rather
// than ship an export whose `name` the bundler changed.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { INDEX_EXPORTS, writeTinyPackage } from './tiny-packages.js';

const BUNDLE = fileURLToPath(new URL('../../bundle.mjs', import.meta.url));
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const root = mkdtempSync(join(tmpdir(), 'tidemark-bundle-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A package of `files` (under src/), built by tsc; returns its directory. */
function built(name: string, files: Record<string, string>): string {
  const dir = writeTinyPackage(join(root, name), files, { name, ...INDEX_EXPORTS });
  execFileSync(process.execPath, [TSC, '-p', join(dir, 'tsconfig.build.json')]);
  return dir;
}

// Each case runs tsc; a loaded two-core machine is slow at it. Bounds a hang, times nothing.
describe('bundle.mjs', { timeout: 120_000 }, () => {
  it('bundles each entry point and each file started by path, and removes the modules they hold', async () => {
    const dir = built('ok', {
      'index.ts':
        "export { twice } from './twice.js';\nexport const child = \"builtFile(import.meta.url, 'real/child.js')\";\n",
      'twice.ts': 'export function twice(n: number): number {\n  return 2 * n;\n}\n',
      'real/child.ts': "import { twice } from '../twice.js';\nexport const four = twice(2);\n",
    });
    // index names the child the way the code names files it starts (@tidemark/faults builtFile).
    execFileSync(process.execPath, [BUNDLE], { cwd: dir });
    expect(existsSync(join(dir, 'dist', 'twice.js'))).toBe(false);
    expect(existsSync(join(dir, 'dist', 'twice.d.ts'))).toBe(true);
    expect(readdirSync(join(dir, 'dist')).filter((f) => f.startsWith('chunk-'))).toHaveLength(1);
    const index = (await import(pathToFileURL(join(dir, 'dist', 'index.js')).href)) as {
      twice(n: number): number;
    };
    const child = (await import(pathToFileURL(join(dir, 'dist', 'real', 'child.js')).href)) as {
      four: number;
    };
    expect(index.twice(3)).toBe(6);
    expect(child.four).toBe(4);
    expect(index.twice.name).toBe('twice');
  });

  it('fails, leaving what tsc emitted, when the bundler would rename an export', () => {
    const dir = built('renamed', {
      'index.ts': "export { makeA } from './a.js';\nexport { Thing } from './b.js';\n",
      'a.ts': 'class Thing {\n  a = 1;\n}\nexport const makeA = (): object => new Thing();\n',
      'b.ts': 'export class Thing {\n  b = 2;\n}\n',
    });
    const run = spawnSync(process.execPath, [BUNDLE], { cwd: dir, encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('exports renamed by the bundler');
    expect(run.stderr).toContain('Thing');
    expect(existsSync(join(dir, 'dist', 'b.js'))).toBe(true);
    expect(existsSync(join(dir, '.bundle'))).toBe(false);
  });
});
