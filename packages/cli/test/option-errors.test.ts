// Bad option values on the command line: USAGE (exit 2) on one line naming the option, never a
// multi-line parser message, INVALID from the store or INTERNAL.
import { describe, expect, it } from 'vitest';
import { expectOneErrorLine, tidemark, useTempHome } from './run-cli.js';

useTempHome();

describe('expected failures are one line', () => {
  // Regression: parseArgs's multi-line message for a value that looks like an option was printed as is.
  it('a multi-line option error from the argument parser (list --limit -1) is one line, exit 2', () => {
    expectOneErrorLine(tidemark(['list', '--limit', '-1']), 'USAGE', 2);
  });

  // Regression: --limit 0 or 1.5 reached the store and came back as INVALID.
  it('--limit that is not a positive integer is USAGE, not INVALID from the store', () => {
    for (const limit of ['0', '1.5', '-1']) {
      const run = tidemark(['--store', 'memory:', 'list', `--limit=${limit}`]);
      expectOneErrorLine(run, 'USAGE', 2);
      expect(run.stderr).toContain('--limit');
    }
    expect(tidemark(['--store', 'memory:', 'list', '--limit', '3']).status).toBe(0);
  });

  // Regression: a cutoff date beyond what a Date holds threw a RangeError, reported as INTERNAL.
  it('prune --older-than beyond any valid date is USAGE naming the option, not INTERNAL', () => {
    for (const days of ['1000000000', '1e15']) {
      const run = tidemark(['--store', 'memory:', 'prune', '--older-than', days]);
      expectOneErrorLine(run, 'USAGE', 2);
      expect(run.stderr).toContain('--older-than');
    }
    // Large but meaningful values still work.
    const ok = tidemark(['--store', 'memory:', 'prune', '--older-than', '36500', '--json']);
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ dryRun: true, toTrash: [] });
  });
});
