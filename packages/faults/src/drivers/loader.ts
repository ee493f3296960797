// One way in for every backend, ours and a third party's: a harness driver is a module whose
// default export is a HarnessDriver, or a function of no arguments that returns one (or a promise
// of one). `--backends jsonl` is `--driver @tidemark/jsonl/harness`; `--driver ./x.js` is a file.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { HarnessDriver } from './driver.js';
import { FIRST_PARTY_BACKENDS } from './first-party.js';

/**
 * A driver that cannot be loaded or is malformed. The harness entry prints its one-line message
 * and exits with status 2 (a setup error, not a backend violation).
 */
export class HarnessSetupError extends Error {
  override readonly name = 'HarnessSetupError';
}

/** A loaded driver and how the command line names it again (for replay commands). */
export interface LoadedDriver {
  driver: HarnessDriver;
  /** The words that select this driver on the command line: `--backends jsonl`, `--driver /abs/x.js`. */
  selector: string;
}

/** Where {@link loadHarnessDriver} looks. */
export interface LoadOptions {
  /** Directory a relative path is taken from, and the first place a package name is looked up (default: `process.cwd()`). */
  cwd?: string;
  /** More directories a package name is looked up from, after `cwd` (the CLI adds its own install). */
  resolveFrom?: readonly string[];
}

/** Whether `spec` names a file (a path or a file URL) rather than a package. Pure. */
export function isDriverPath(spec: string): boolean {
  return spec.startsWith('.') || spec.startsWith('file:') || isAbsolute(spec);
}

/** `spec` of a `--driver` as a file path, or as what a package name resolves to from the first base that has it. */
function resolveDriverModule(spec: string, bases: readonly string[]): string {
  if (spec.startsWith('file:')) return fileURLToPath(spec);
  if (isDriverPath(spec)) return resolve(bases[0]!, spec);
  const errors: string[] = [];
  for (const base of bases) {
    try {
      return createRequire(join(base, 'noop.js')).resolve(spec);
    } catch (error) {
      errors.push((error as Error).message.split('\n')[0]!);
    }
  }
  throw new HarnessSetupError(
    `driver ${spec}: cannot be resolved from ${bases.join(', ')} (${errors[0] ?? 'not found'})`,
  );
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? JSON.stringify(value) : typeof value;
}

/**
 * Checks that `value` has the shape of a {@link HarnessDriver}, throwing a
 * {@link HarnessSetupError} that names the first wrong field (`where` says which driver). Does not
 * import anything: see {@link checkRealModule}.
 */
export function validateHarnessDriver(value: unknown, where: string): HarnessDriver {
  const fail = (field: string, wanted: string, got: unknown): never => {
    throw new HarnessSetupError(`driver ${where}: ${field} must be ${wanted} (got ${describe(got)})`);
  };
  if (typeof value !== 'object' || value === null) fail('the default export', 'a HarnessDriver', value);
  const d = value as Record<string, unknown>;
  if (typeof d.name !== 'string' || d.name.trim() === '' || /[\s,]/.test(d.name))
    fail('name', 'a non-empty string without spaces or commas', d.name);
  if (d.kind !== 'fs' && d.kind !== 'engine') fail('kind', "'fs' or 'engine'", d.kind);
  if (d.kind === 'fs' && typeof d.open !== 'function') fail('open', 'a function (kind fs)', d.open);
  if (d.kind === 'engine' && typeof d.create !== 'function')
    fail('create', 'a function (kind engine)', d.create);
  if (d.durabilities !== undefined) {
    const modes = d.durabilities;
    if (!Array.isArray(modes) || modes.length === 0 || modes.some((m) => m !== 'strict' && m !== 'relaxed'))
      fail('durabilities', "a non-empty array of 'strict' and 'relaxed'", modes);
  }
  if (d.layout !== undefined) {
    const layout = d.layout as Record<string, unknown> | null;
    if (typeof layout !== 'object' || layout === null) fail('layout', 'an object', layout);
    else {
      if (typeof layout.isLog !== 'function') fail('layout.isLog', 'a function', layout.isLog);
      if (typeof layout.isQuarantine !== 'function')
        fail('layout.isQuarantine', 'a function', layout.isQuarantine);
      if (layout.logs !== undefined && layout.logs !== 'append' && layout.logs !== 'rewrite')
        fail('layout.logs', "'append' or 'rewrite'", layout.logs);
    }
  }
  if (d.real !== undefined) {
    const real = d.real as Record<string, unknown> | null;
    if (typeof real !== 'object' || real === null) fail('real', 'an object', real);
    else {
      if (real.location !== 'dir' && real.location !== 'file')
        fail('real.location', "'dir' or 'file'", real.location);
      if (typeof real.module !== 'string' || real.module === '')
        fail('real.module', 'a module specifier', real.module);
      if (typeof real.factory !== 'string' || real.factory === '')
        fail('real.factory', 'the name of an export', real.factory);
      if (typeof real.options !== 'function') fail('real.options', 'a function', real.options);
    }
  }
  return value as HarnessDriver;
}

/**
 * `real.module` of a driver as a file URL the child processes can import: a relative path or a
 * package name is resolved from `from` (the driver module's directory). Unchanged when it does
 * not resolve there (it may still resolve from this package); {@link checkRealModule} finds out.
 */
export function resolveRealModule(specifier: string, from: string): string {
  if (specifier.startsWith('file:') || specifier.startsWith('node:')) return specifier;
  if (isAbsolute(specifier)) return pathToFileURL(specifier).href;
  if (specifier.startsWith('.')) return pathToFileURL(resolve(from, specifier)).href;
  try {
    return pathToFileURL(createRequire(join(from, 'noop.js')).resolve(specifier)).href;
  } catch {
    return specifier;
  }
}

/**
 * Imports a driver's `real.module` and checks that `real.factory` is a function there, as the
 * child processes will need it; a {@link HarnessSetupError} naming the field otherwise (instead
 * of every real-fault row failing with `untyped-error` and `not-writable`).
 */
export async function checkRealModule(driver: HarnessDriver, where: string): Promise<void> {
  const { real } = driver;
  if (real === undefined) return;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(real.module)) as Record<string, unknown>;
  } catch (error) {
    throw new HarnessSetupError(
      `driver ${where}: real.module ${JSON.stringify(real.module)} cannot be imported (${(error as Error).message.split('\n')[0]})`,
    );
  }
  if (typeof mod[real.factory] !== 'function')
    throw new HarnessSetupError(
      `driver ${where}: real.factory ${JSON.stringify(real.factory)} is not a function exported by ${real.module}`,
    );
}

/**
 * Loads one driver module: `spec` is a path (relative to `cwd`), a file URL or a package name
 * (looked up from `cwd`, then `resolveFrom`). The module's default export must be a
 * {@link HarnessDriver} or a function of no arguments returning one or a promise of one. Its
 * `real.module` is resolved from the module's directory and checked. Throws
 * {@link HarnessSetupError} with one line naming what is wrong.
 *
 * @example
 * ```ts
 * const { driver } = await loadHarnessDriver('./harness-driver.js');
 * const report = await runFaultHarness(driver, { quick: true });
 * ```
 */
export async function loadHarnessDriver(spec: string, options: LoadOptions = {}): Promise<LoadedDriver> {
  const cwd = options.cwd ?? process.cwd();
  const path = resolveDriverModule(spec, [cwd, ...(options.resolveFrom ?? [])]);
  if (isDriverPath(spec) && !existsSync(path))
    throw new HarnessSetupError(`driver ${spec}: no such file ${path}`);
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(path).href)) as { default?: unknown };
  } catch (error) {
    throw new HarnessSetupError(
      `driver ${spec}: cannot be imported (${(error as Error).message.split('\n')[0]})`,
    );
  }
  let value = mod.default;
  if (value === undefined)
    throw new HarnessSetupError(`driver ${spec}: the module has no default export (a HarnessDriver)`);
  if (typeof value === 'function') {
    try {
      value = await (value as () => unknown)();
    } catch (error) {
      throw new HarnessSetupError(`driver ${spec}: its default export threw (${(error as Error).message})`);
    }
  }
  const driver = validateHarnessDriver(value, spec);
  const loaded: HarnessDriver =
    driver.real === undefined
      ? driver
      : { ...driver, real: { ...driver.real, module: resolveRealModule(driver.real.module, dirname(path)) } };
  await checkRealModule(loaded, spec);
  const selector = isDriverPath(spec) ? `--driver ${path}` : `--driver ${spec}`;
  return { driver: loaded, selector };
}

/** The driver of a first-party backend by name, through the same loader (`@tidemark/<name>/harness`). */
export async function loadFirstPartyDriver(name: string, options: LoadOptions = {}): Promise<LoadedDriver> {
  if (!(FIRST_PARTY_BACKENDS as readonly string[]).includes(name))
    throw new HarnessSetupError(
      `unknown backend ${name}; known: ${FIRST_PARTY_BACKENDS.join(', ')} (a third party's driver: --driver PATH|PACKAGE)`,
    );
  const { driver } = await loadHarnessDriver(`@tidemark/${name}/harness`, options);
  return { driver, selector: `--backends ${name}` };
}

/**
 * The built file `file` (a path under the package's `dist/`) of the package the module at
 * `moduleUrl` belongs to, whether that module runs from `src/` (tests) or from `dist/`. Child
 * processes import built code: run the harness after `pnpm build`.
 */
export function builtFile(moduleUrl: string, file: string): string {
  const here = fileURLToPath(moduleUrl);
  const parts = here.split(sep);
  const at = Math.max(parts.lastIndexOf('src'), parts.lastIndexOf('dist'));
  if (at < 0) return join(dirname(here), file);
  return join(parts.slice(0, at).join(sep) || sep, 'dist', file);
}
