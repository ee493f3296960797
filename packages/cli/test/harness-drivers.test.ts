// `tidemark harness --driver`: a driver module named by path runs through the same loader as the
// first-party backends, and the replay command the report prints runs as printed, from another
// directory, with `tidemark` on the PATH as a user has it.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from './run-cli.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const scratch = mkdtempSync(join(tmpdir(), 'tidemark-harness-drivers-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function run(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env) {
  const done = spawnSync(process.execPath, [BIN, ...args], { cwd, env, encoding: 'utf8', timeout: 300_000 });
  return { status: done.status, stdout: done.stdout, stderr: done.stderr };
}

describe('tidemark harness --driver', () => {
  it('fails a broken driver with a replay command that reproduces the violation as printed', () => {
    const out = join(scratch, 'report');
    const first = run(
      ['harness', '--quick', '--driver', './broken-memory-driver.mjs', '--out', out],
      fixtures,
    );
    expect(first.stderr).toBe('');
    expect(first.status).toBe(1);
    const report = JSON.parse(readFileSync(join(out, 'harness-report.json'), 'utf8')) as {
      selectors: Record<string, string>;
      failures: { kind: string; reproduction?: { replayId?: string } }[];
    };
    const driverPath = join(fixtures, 'broken-memory-driver.mjs');
    expect(report.selectors).toEqual({ 'memory-has-false-on-error': `--driver ${driverPath}` });
    expect(report.failures.map((f) => f.kind)).toContain('false-absence');
    const printed = first.stdout
      .split('\n')
      .map((line) => line.trim())
      .find((line) => line.startsWith('replay: ') && line.includes(' --replay '));
    const command = printed?.slice('replay: '.length);
    expect(command).toMatch(
      new RegExp(
        `^tidemark harness --driver ${driverPath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} --quick --replay \\S+$`,
      ),
    );
    // `tidemark` on the PATH, as an install puts it there; the command runs from elsewhere.
    const bin = join(scratch, 'bin');
    rmSync(bin, { recursive: true, force: true });
    spawnSync('mkdir', ['-p', bin]);
    writeFileSync(join(bin, 'tidemark'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
    chmodSync(join(bin, 'tidemark'), 0o755);
    const again = spawnSync('sh', ['-c', command!], {
      cwd: scratch,
      env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` },
      encoding: 'utf8',
      timeout: 300_000,
    });
    expect(again.status).toBe(1);
    expect(again.stdout).toMatch(/^memory-has-false-on-error: /);
    expect(again.stdout).toContain('VIOLATION false-absence');
  }, 300_000);

  it('passes the first-party memory backend named by --backends and by --driver alike', () => {
    const byName = run(
      ['harness', '--quick', '--backends', 'memory', '--json', '--out', join(scratch, 'a')],
      scratch,
    );
    const byModule = run(
      ['harness', '--quick', '--driver', '@tidemark/memory/harness', '--json', '--out', join(scratch, 'b')],
      scratch,
    );
    expect([byName.status, byModule.status]).toEqual([0, 0]);
    type Totals = { totals: { backend: string; runs: number }[]; selectors: Record<string, string> };
    const a = JSON.parse(byName.stdout) as Totals;
    const b = JSON.parse(byModule.stdout) as Totals;
    expect(a.totals.map((t) => [t.backend, t.runs])).toEqual(b.totals.map((t) => [t.backend, t.runs]));
    expect([a.selectors.memory, b.selectors.memory]).toEqual([
      '--backends memory',
      '--driver @tidemark/memory/harness',
    ]);
  }, 300_000);

  it('refuses a driver that cannot be loaded with one line and status 2', () => {
    const missing = run(['harness', '--driver', './no-such-driver.mjs'], scratch);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toBe(
      `tidemark harness: driver ./no-such-driver.mjs: no such file ${join(scratch, 'no-such-driver.mjs')}\n`,
    );
    const help = run(['harness', '--help'], scratch);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('--driver MODULE');
  }, 60_000);
});
