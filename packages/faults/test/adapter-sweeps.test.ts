import type { FileSystem, SessionStore } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import {
  type AdapterFault,
  type AdapterRunResult,
  adapterCrashSweep,
  adapterErrorSweep,
  adapterWorkloadThenVerify,
  jsonlAdapterRun,
  memfsFileSystem as memfs,
  type OpenJsonlOn,
  recordAdapterCrashPoints,
  sampleEvenly,
  type WorkloadThenVerify,
} from '../src/index.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

// The sweeps only open, hand over and close stores; a stand-in that carries its file system lets
// these tests drive the disk directly, without a backend (which this kit may not import).
interface DiskStore {
  root: string;
  fs: FileSystem;
  close(): Promise<void>;
}
const openDisk: OpenJsonlOn = async (root, fs) =>
  ({ root, fs, close: async () => undefined }) satisfies DiskStore as unknown as SessionStore;
const disk = (store: SessionStore) => store as unknown as DiskStore;

async function appendLine(store: SessionStore, line: string, sync: boolean): Promise<void> {
  const { fs, root } = disk(store);
  const handle = await fs.open(`${root}/log`, 'a');
  try {
    await handle.write(enc(`${line}\n`), 0, line.length + 1, null);
    if (sync) await handle.datasync();
  } finally {
    await handle.close();
  }
  if (sync) await fs.syncDir(root); // the new file's entry, too
}

async function readLog(store: SessionStore): Promise<string> {
  const { fs, root } = disk(store);
  return dec(await fs.readFile(`${root}/log`)).toString();
}

describe('sampleEvenly', () => {
  it('spreads at most max indexes evenly, or keeps all of them', () => {
    expect(sampleEvenly(10, 4, false)).toEqual([0, 2, 5, 7]);
    expect(sampleEvenly(3, 4, false)).toEqual([0, 1, 2]);
    expect(sampleEvenly(10, 4, true)).toHaveLength(10);
  });
});

describe('adapterErrorSweep', () => {
  // A workload of 5 storage calls that rejects whenever its fault fires, except at call 4 (absorbed).
  const run = async (fault: AdapterFault | undefined): Promise<AdapterRunResult> => {
    const fires = fault !== undefined && fault.at <= 5 && fault.at !== 4;
    return { operations: 5, injected: fires ? 1 : 0, rejected: fires, violations: fires ? ['lost one'] : [] };
  };

  it('runs the baseline, then every errno × mode × sampled operation, labelling violations', async () => {
    const totals = await adapterErrorSweep(run, { errnos: ['EIO', 'ENOSPC'], sampledRuns: 10, full: false });
    expect(totals.runs).toBe(1 + 2 * 2 * 5);
    expect(totals.operations).toBe(5);
    expect(totals.rejections).toBe(2 * 2 * 4);
    expect(totals.violations).toContain('EIO once at operation 1: lost one');
    expect(totals.violations).toContain('ENOSPC persistent at operation 4: the fault never fired');
    expect(totals.violations).toHaveLength(2 * 2 * 5);
  });

  it('leaves the unfired check out when asked, and sweeps nothing after a bad baseline', async () => {
    const quiet = await adapterErrorSweep(run, {
      errnos: ['EIO'],
      modes: ['once'],
      sampledRuns: 10,
      full: false,
      unfiredIsViolation: false,
    });
    expect(quiet.violations.filter((v) => v.includes('never fired'))).toEqual([]);
    const broken = await adapterErrorSweep(
      async () => ({ operations: 5, injected: 0, rejected: true, violations: [] }),
      { errnos: ['EIO'], sampledRuns: 10, full: false },
    );
    expect(broken.runs).toBe(1);
    expect(broken.baseline.rejected).toBe(true);
  });
});

describe('jsonlAdapterRun', () => {
  const verify: WorkloadThenVerify = async (open, lift, reopen) => {
    const violations: string[] = [];
    let rejected = false;
    const store = await open();
    try {
      await appendLine(store, 'one', true);
    } catch {
      rejected = true;
    }
    lift();
    await appendLine(store, 'two', true);
    const reopened = await reopen();
    const log = await readLog(reopened);
    if (!log.endsWith('two\n')) violations.push(`log is ${JSON.stringify(log)}`);
    return { rejected, violations };
  };

  it('faults the chosen call of the store opened under the fault, and not the reopened one', async () => {
    const run = jsonlAdapterRun(openDisk, verify);
    const baseline = await run(undefined);
    expect(baseline).toMatchObject({ rejected: false, injected: 0, violations: [] });
    expect(baseline.operations).toBeGreaterThanOrEqual(3); // open, write, datasync, close
    const faulted = await run({ at: 2, errno: 'EIO', mode: 'persistent' });
    expect(faulted).toMatchObject({ rejected: true, violations: [] });
    expect(faulted.injected).toBeGreaterThan(0);
  });
});

describe('recordAdapterCrashPoints and adapterCrashSweep', () => {
  it('checks every crash state of the kept points against what was acknowledged by then', async () => {
    let acknowledged = '';
    const { points, outcome } = await recordAdapterCrashPoints(
      openDisk,
      async (store) => {
        await appendLine(store, 'one', true);
        acknowledged = 'one\n';
        await appendLine(store, 'two', false);
        return 'ran';
      },
      () => acknowledged,
    );
    expect(outcome).toBe('ran');
    expect(points.length).toBeGreaterThan(2);
    const readBack = async (store: SessionStore) => readLog(store).catch(() => '');
    const sound = await adapterCrashSweep(
      points,
      openDisk,
      async (store, ack, where) => ((await readBack(store)).startsWith(ack) ? [] : [`${where}: lost ${ack}`]),
      { sampledPoints: 100, full: false },
    );
    expect(sound).toMatchObject({ points: points.length, swept: points.length, violations: [] });
    expect(sound.states).toBeGreaterThan(points.length);
    // A check that asks for the unsynced line must fail in some state: the sweep can find loss.
    const strict = await adapterCrashSweep(
      points.slice(-1),
      openDisk,
      async (store, _ack, where) => ((await readBack(store)).includes('two') ? [] : [`${where}: no two`]),
      { sampledPoints: 1, full: false },
    );
    expect(strict.violations.length).toBeGreaterThan(0);
    expect(strict.violations[0]).toMatch(/^crash after op \d+ \(\w+\), .*: no two$/);
  });
});

describe('adapterWorkloadThenVerify', () => {
  const lines: string[] = [];
  const verify = (options?: Parameters<typeof adapterWorkloadThenVerify>[1]) =>
    adapterWorkloadThenVerify(
      () => ({
        run: async (store) => {
          try {
            await appendLine(store, 'one', true);
            return { violations: [] };
          } catch (error) {
            return { rejected: error, violations: [] };
          }
        },
        checkLive: async (_store, outcome) => {
          lines.push(`live ${outcome.rejected === undefined ? 'ok' : 'rejected'}`);
          return [];
        },
        checkReopened: async (store) =>
          (await readLog(store).catch(() => '')).includes('one') ? [] : ['no one'],
      }),
      options,
    );

  it('runs, lifts, checks the live store, then the reopened one', async () => {
    lines.length = 0;
    const run = jsonlAdapterRun(openDisk, verify());
    expect(await run(undefined)).toMatchObject({ rejected: false, violations: [] });
    expect(await run({ at: 2, errno: 'EIO', mode: 'once' })).toMatchObject({ rejected: true, injected: 1 });
    expect(lines).toEqual(['live ok', 'live rejected']);
  });

  it('judges a failed open: untyped is a violation, and a rejection unless told otherwise', async () => {
    const failingOpen = () => Promise.reject(new Error('plain'));
    const reopen = async () => {
      const fs = memfs();
      await fs.mkdir('/r', { recursive: true });
      const store = await openDisk('/r', fs);
      await appendLine(store, 'one', true);
      return store;
    };
    const untyped = await verify()(failingOpen, () => undefined, reopen);
    expect(untyped).toEqual({ rejected: true, violations: ['open rejected untyped: Error: plain'] });
    const lenient = await verify({ typedOpenError: false, openFailureRejects: false })(
      failingOpen,
      () => undefined,
      reopen,
    );
    expect(lenient).toEqual({ rejected: false, violations: [] });
  });
});
