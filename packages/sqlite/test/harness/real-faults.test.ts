import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { childScriptPath, formatReportTable, runFaultHarness } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { sqliteDriver } from '../../src/harness/index.js';

// Child processes import built code (`dist`), as the harness does when run after `pnpm build`.
// Without a build these tests cannot start a child at all, so they are skipped with that reason.
const distOf = (pkg: string) => fileURLToPath(new URL(`../../../${pkg}/dist/index.js`, import.meta.url));
const built = (...pkgs: string[]) =>
  existsSync(childScriptPath()) && pkgs.every((p) => existsSync(distOf(p)));

describe('real faults on the real disk: JSONL', () => {
  // `pnpm test` builds first (turbo), so a missing build here is a broken pipeline, not a reason
  // to skip quietly: this check fails and names what to build.
  it('has the built code its child processes run', () => {
    expect({ child: existsSync(childScriptPath()), core: built('core'), sqlite: built('sqlite') }).toEqual({
      child: true,
      core: true,
      sqlite: true,
    });
  });

  it.skipIf(!built('core', 'sqlite'))(
    'SQLite: corruption, truncation, a foreign lock and a full database are typed errors',
    async () => {
      const report = await runFaultHarness(sqliteDriver(), {
        skip: ['errors', 'crash'],
        kills: 4,
        racerRuns: 2,
      });
      if (!report.passed) console.log(formatReportTable(report));
      expect(report.failures).toEqual([]);
      for (const row of [
        'sqlite: locked by another process',
        'sqlite: full database (max_page_count)',
        'sqlite: truncated file',
      ]) {
        expect(report.cells.find((c) => c.faultClass === row)?.errorsSurfaced).toBeGreaterThan(0);
      }
    },
    120_000,
  );
});
