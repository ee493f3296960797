import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { childScriptPath, formatReportTable, runFaultHarness } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { jsonlDriver } from '../../src/harness.js';

// Child processes import built code (`dist`), as the harness does when run after `pnpm build`.
// Without a build these tests cannot start a child at all, so they are skipped with that reason.
const distOf = (pkg: string) => fileURLToPath(new URL(`../../../${pkg}/dist/index.js`, import.meta.url));
const built = (...pkgs: string[]) =>
  existsSync(childScriptPath()) && pkgs.every((p) => existsSync(distOf(p)));

describe('real faults on the real disk: JSONL', () => {
  // `pnpm test` builds first (turbo), so a missing build here is a broken pipeline, not a reason
  // to skip quietly: this check fails and names what to build.
  it('has the built code its child processes run', () => {
    expect({ child: existsSync(childScriptPath()), core: built('core'), jsonl: built('jsonl') }).toEqual({
      child: true,
      core: true,
      jsonl: true,
    });
  });

  it.skipIf(!built('core', 'jsonl'))(
    'JSONL: ENOTDIR, EACCES as uid 65534 and SIGKILLs surface errors, never absence or loss',
    async () => {
      const report = await runFaultHarness(jsonlDriver(), {
        skip: ['errors', 'crash'],
        kills: 8,
        racerRuns: 4,
      });
      if (!report.passed) console.log(formatReportTable(report));
      expect(report.failures).toEqual([]);
      const rows = new Map(report.cells.map((c) => [c.faultClass, c]));
      expect(rows.get('SIGKILL of a writer (real disk)')?.runs).toBe(8);
      expect(rows.get('ENOTDIR (file as parent, real disk)')?.errorsSurfaced).toBeGreaterThan(0);
      if (process.getuid?.() === 0)
        expect(rows.get('EACCES (unprivileged uid, real disk)')?.errorsSurfaced).toBeGreaterThan(0);
      expect(report.totals[0]?.killAcks).toBeGreaterThan(0);
      // Two racing processes, one of them killed in runs 1 and 3: every acknowledged batch kept.
      const racers = rows.get('concurrent writers (two processes, real disk)');
      expect(racers?.runs).toBe(4);
      expect(racers?.faultsInjected).toBeGreaterThan(0);
    },
    120_000,
  );
});
