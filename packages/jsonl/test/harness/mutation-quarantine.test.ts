import {
  type CrashStateLimits,
  crashSweepFs,
  damageSweepFs,
  QUICK_CRASH_LIMITS,
  ReportBuilder,
} from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import {
  jsonlQuarantineDropsAByte,
  jsonlQuarantineDropsAPartialCharacter,
  jsonlRepairDeletesQuarantine,
  jsonlTailCutKeepsOneLine,
} from './fixtures/broken-jsonl.js';
import { crashSweep, failing, SUBSET_OF_QUICK } from './fixtures/one-sweep.js';

// Each broken variant must be caught in the cell its bug belongs to (the engine and write-path
// variants are in packages/memory/test/harness/, (r) in packages/sqlite/test/harness/); see
// fixtures/one-sweep.ts for why each case runs one sweep only. The timeouts only guard against a hang.

// CI runs the cheaper variants of this file; the ones whose sweep runs longest before it finds its
// bug run under TIDEMARK_FULL=1 (each took 20 s to 110 s of a CI run that is over its 12-minute
// budget on two cores). The mechanisms they prove are in CI all the same: the quick harness runs
// the same sweeps clean, and crash-fs.test.ts checks that the quick run cuts inside multi-byte
// characters, which only (v) needs.
const FULL = process.env.TIDEMARK_FULL === '1';

describe('mutation check: the harness catches broken JSONL variants that take bytes out of a log without quarantining them', () => {
  it('(p) a quarantine copy that drops a byte: removed bytes are not all in quarantine', async () => {
    const report = await crashSweep(jsonlQuarantineDropsAByte());
    expect(failing(report, 'crash (power loss)')).toBeDefined();
    // Nothing else is wrong: every acknowledged event is there, only a removed byte is gone.
    expect(new Set(report.failures.map((f) => f.kind))).toEqual(new Set(['unquarantined-bytes']));
  }, 600_000);
  it.runIf(FULL)(
    '(v) a quarantine that loses a character cut in half: caught only by the quick run cutting inside multi-byte characters',
    async () => {
      const sweep = async (limits: CrashStateLimits) => {
        const builder = new ReportBuilder(1);
        const options = { syncOnly: true, limits, recoverySamples: 0 };
        await crashSweepFs(jsonlQuarantineDropsAPartialCharacter(), builder, options);
        return builder.build(true, new Date(), []);
      };
      // The cuts a sampled sweep makes (0, 1, the last byte, both sides of each newline, a few even
      // samples) never stop inside a multi-byte character here; the quick run's cuts do.
      expect((await sweep(SUBSET_OF_QUICK)).passed).toBe(true);
      const quick = await sweep(QUICK_CRASH_LIMITS);
      expect(new Set(quick.failures.map((f) => f.kind))).toEqual(new Set(['unquarantined-bytes']));
      expect(quick.failures[0]?.fault).toMatch(/torn at/);
    },
    900_000,
  );
  it.runIf(FULL)(
    '(w) a tail cut that quarantines only the first record it removes: caught by the tail cut sweep',
    async () => {
      const report = await crashSweep(jsonlTailCutKeepsOneLine(), { removal: true });
      // The reopen's own torn-tail repair is right: the plain crash cell passes.
      expect(report.cells.find((c) => c.faultClass === 'crash (power loss)')?.status).toBe('pass');
      expect(failing(report, 'crash + tail cut')).toBeDefined();
      expect(new Set(report.failures.map((f) => f.kind))).toEqual(new Set(['unquarantined-bytes']));
    },
    900_000,
  );
  it('(x) a repair that deletes its quarantine files: caught by the repair of damaged logs', async () => {
    const damaged = new ReportBuilder(3);
    await damageSweepFs(jsonlRepairDeletesQuarantine(), damaged);
    const report = damaged.build(true, new Date(), []);
    expect(report.cells.find((c) => c.faultClass === 'damaged file (one byte flipped)')?.status).toBe('pass');
    expect(failing(report, 'damaged file + repair')?.examples.join('\n')).toMatch(/unquarantined-bytes/);
  }, 600_000);
});
