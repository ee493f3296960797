// One way in for every driver: the loader takes a path or a package name, accepts a driver or a
// function returning one, resolves `real.module` from the driver's own directory, and turns
// anything wrong into one setup error that names the field. The harness entry exits 2 with it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  builtFile,
  HARNESS_USAGE,
  HarnessSetupError,
  loadFirstPartyDriver,
  loadHarnessDriver,
  parseHarnessArgs,
  validateHarnessDriver,
} from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const drivers = join(here, 'fixtures', 'drivers');
const bin = join(here, '..', 'dist', 'bin.js');

describe('loadHarnessDriver', () => {
  it('loads a default export that is a function returning a promise of a driver, by relative path', async () => {
    const { driver, selector } = await loadHarnessDriver('./tiny-engine.mjs', { cwd: drivers });
    expect(driver.name).toBe('tiny-engine');
    // The replay command names the driver by absolute path: it runs from any directory.
    expect(selector).toBe(`--driver ${join(drivers, 'tiny-engine.mjs')}`);
    // real.module was relative to the driver module; the children get a file URL.
    expect(driver.real?.module).toBe(pathToFileURL(join(drivers, 'tiny-store.mjs')).href);
  });

  it.each([
    ['no-name.mjs', /^driver \.\/no-name\.mjs: name must be a non-empty string .*\(got undefined\)$/],
    ['bad-kind.mjs', /^driver \.\/bad-kind\.mjs: kind must be 'fs' or 'engine' \(got "files"\)$/],
    [
      'bad-real-module.mjs',
      /^driver \.\/bad-real-module\.mjs: real\.module ".*no-such-store\.mjs" cannot be imported/,
    ],
    [
      'bad-factory.mjs',
      /^driver \.\/bad-factory\.mjs: real\.factory "openMissing" is not a function exported by /,
    ],
    ['no-default.mjs', /^driver \.\/no-default\.mjs: the module has no default export/],
    ['throws.mjs', /^driver \.\/throws\.mjs: its default export threw \(needs TIDEMARK_TEST_URL\)$/],
    ['missing.mjs', /^driver \.\/missing\.mjs: no such file /],
  ])('refuses %s with one line naming what is wrong', async (file, message) => {
    const error = await loadHarnessDriver(`./${file}`, { cwd: drivers }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HarnessSetupError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('\n');
  });

  it('looks a package name up from each directory in turn, and says where it looked', async () => {
    const error = await loadHarnessDriver('@acme/no-such-store/harness', { cwd: drivers }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(HarnessSetupError);
    expect((error as Error).message).toMatch(
      /^driver @acme\/no-such-store\/harness: cannot be resolved from /,
    );
    await expect(loadFirstPartyDriver('json-dir')).rejects.toThrow(
      /^unknown backend json-dir; known: memory, jsonl/,
    );
  });

  it('checks fields the sweeps rely on before anything runs', () => {
    const base = { name: 'x', kind: 'fs', open: async () => ({}) };
    expect(() => validateHarnessDriver({ ...base, durabilities: ['fast'] }, 'x')).toThrow(
      /durabilities must be/,
    );
    expect(() => validateHarnessDriver({ ...base, layout: { isLog: () => true } }, 'x')).toThrow(
      /layout\.isQuarantine must be a function/,
    );
    expect(() =>
      validateHarnessDriver(
        { ...base, layout: { isLog: () => true, isQuarantine: () => false, logs: 'grow' } },
        'x',
      ),
    ).toThrow(/layout\.logs must be 'append' or 'rewrite'/);
    expect(() => validateHarnessDriver({ ...base, kind: 'engine' }, 'x')).toThrow(
      /create must be a function/,
    );
    expect(validateHarnessDriver(base, 'x').name).toBe('x');
  });

  it('finds the built file of the package a module belongs to, from src/ or dist/', () => {
    expect(builtFile('file:///p/node_modules/@a/s/dist/harness.js', 'real/child.js')).toBe(
      '/p/node_modules/@a/s/dist/real/child.js',
    );
    expect(builtFile('file:///repo/packages/jsonl/src/harness.ts', 'index.js')).toBe(
      '/repo/packages/jsonl/dist/index.js',
    );
  });
});

describe('the harness command line', () => {
  it('parses --driver (repeatable) beside --backends, and names every flag in --help', () => {
    expect(parseHarnessArgs(['--driver', './a.js', '--driver', 'b'])).toMatchObject({
      backends: [],
      drivers: ['./a.js', 'b'],
    });
    expect(parseHarnessArgs([]).backends).toEqual(['memory', 'jsonl', 'sqlite', 'postgres']);
    expect(parseHarnessArgs(['--backends=jsonl', '--driver=./a.js'])).toMatchObject({
      backends: ['jsonl'],
      drivers: ['./a.js'],
    });
    expect(() => parseHarnessArgs(['--no-such-option'])).toThrow(/--no-such-option.*see --help/);
    expect(() => parseHarnessArgs(['--kills', 'many'])).toThrow(/--kills must be a whole number/);
    expect(parseHarnessArgs(['--stop-after', '1']).stopAfter).toBe(1);
    expect(parseHarnessArgs([]).stopAfter).toBeUndefined();
    expect(() => parseHarnessArgs(['--stop-after', '0'])).toThrow(/--stop-after must be at least 1/);
    for (const flag of [
      '--backends',
      '--driver',
      '--quick',
      '--out',
      '--kills',
      '--stop-after',
      '--replay',
      '--json',
      '--resolve-from',
      '--help',
    ])
      expect(HARNESS_USAGE).toContain(flag);
  });

  // The entry runs from the build (`pnpm test` builds first).
  it.runIf(existsSync(bin))(
    'prints --help with status 0, and a setup error on one line with status 2',
    () => {
      const help = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8' });
      expect(help.status).toBe(0);
      expect(help.stdout).toBe(HARNESS_USAGE);
      const bad = spawnSync(process.execPath, [bin, '--driver', './bad-real-module.mjs'], {
        cwd: drivers,
        encoding: 'utf8',
      });
      expect(bad.status).toBe(2);
      expect(bad.stdout).toBe('');
      expect(bad.stderr).toMatch(
        /^tidemark harness: driver \.\/bad-real-module\.mjs: real\.module .* cannot be imported .*\n$/,
      );
      expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    },
  );
});
