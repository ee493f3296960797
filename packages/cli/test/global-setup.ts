// Builds the packages the CLI's end-to-end tests run (in dependency order), so that the tests
// exercise the real `dist/bin.js` as users run it. Backends that fail to build are reported to
// the tests, which then skip with that reason rather than fail for someone else's work in progress.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

const packages = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** True when dist is at least as new as every source file (turbo's `test` depends on `build`). */
function upToDate(dir: string): boolean {
  const dist = join(dir, 'dist', 'index.js');
  if (!existsSync(dist)) return false;
  const built = statSync(dist).mtimeMs;
  const newest = (d: string): number =>
    Math.max(
      0,
      ...readdirSync(d, { withFileTypes: true }).map((e) =>
        e.isDirectory() ? newest(join(d, e.name)) : statSync(join(d, e.name)).mtimeMs,
      ),
    );
  return newest(join(dir, 'src')) <= built;
}

function build(name: string): string | undefined {
  if (upToDate(join(packages, name))) return undefined;
  const result = spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], {
    cwd: join(packages, name),
    encoding: 'utf8',
  });
  return result.status === 0
    ? undefined
    : `${name} does not build: ${(result.stdout + result.stderr).split('\n')[0]}`;
}

export default function setup(project: TestProject): void {
  for (const required of ['core', 'memory', 'lifecycle', 'sealed']) {
    const failure = build(required);
    if (failure !== undefined) throw new Error(failure);
  }
  // The session browser builds its front end too, so it is built with its own script.
  if (!upToDate(join(packages, 'ui'))) {
    const ui = spawnSync('pnpm', ['run', 'build'], { cwd: join(packages, 'ui'), encoding: 'utf8' });
    if (ui.status !== 0) throw new Error(`ui does not build: ${ui.stdout}${ui.stderr}`);
  }
  const unavailable: Record<string, string> = {};
  for (const optional of ['jsonl', 'sqlite', 'postgres', 'faults']) {
    const failure = build(optional);
    if (failure !== undefined) unavailable[optional] = failure;
  }
  const cli =
    upToDate(join(packages, 'cli')) && existsSync(join(packages, 'cli', 'dist', 'bin.js'))
      ? { status: 0, stdout: '', stderr: '' }
      : spawnSync('pnpm', ['run', 'build'], { cwd: join(packages, 'cli'), encoding: 'utf8' });
  if (cli.status !== 0) throw new Error(`cli does not build: ${cli.stdout}${cli.stderr}`);
  project.provide('unavailable', unavailable);
}

declare module 'vitest' {
  export interface ProvidedContext {
    unavailable: Record<string, string>;
  }
}
