import {
  Checker,
  modeClass,
  modeReplayId,
  replayRun,
  runFaultHarness,
  runWorkload,
  WorkloadModel,
  WRITE_PATH,
  WRITE_PATH_WORKLOAD,
  WritePathRun,
} from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { memoryDriver } from '../../src/harness.js';
import { openMemoryStore } from '../../src/index.js';
import { memoryAbandonDroppingFailedBatch } from './fixtures/broken-writer.js';

describe('the write-path workload', () => {
  it('drives writers, resume and fork, and the model holds what the store acknowledged', async () => {
    const store = await openMemoryStore();
    const model = new WorkloadModel();
    const check = new Checker();
    await runWorkload(store, model, check, {
      checkFailedAppend: false,
      steps: WRITE_PATH_WORKLOAD,
      extension: new WritePathRun(model),
    });
    expect(check.outcome.violations).toEqual([]);
    const types = async (id: string) => (await store.load(id)).events.map((e) => e.type);
    // a: a flushed turn; two events the abandoned writer appended before it gave up (the third
    // was handed back); resume's closing batch for the open call; a turn after the resume.
    expect(await types('sess-a')).toEqual([
      ...['user/message', 'tool/call', 'tool/result', 'turn/end'],
      ...['user/message', 'tool/call'],
      ...['tool/result', 'turn/end'],
      ...['user/message', 'turn/end'],
    ]);
    expect(model.session('a').acked).toHaveLength(10);
    // f: the first turn of a (seqs 0..3), then its own turn.
    const child = await store.load('sess-f');
    expect(child.meta.parent).toEqual({ id: 'sess-a', seq: 3 });
    expect(child.events).toHaveLength(7);
    expect(model.session('f').acked).toHaveLength(7);
    expect(await types('sess-b')).toEqual(['user/message', 'assistant/message', 'turn/end']);
    await store.close();
  });

  it('names its rows and replay ids after the workload', () => {
    const mode = { durability: 'strict' as const, sample: 1, workload: WRITE_PATH };
    expect(modeClass('EIO once', mode)).toBe('write path: EIO once');
    expect(modeReplayId('error:3:EIO:once', mode)).toBe('write-path/error:3:EIO:once');
    expect(modeClass('EIO once', { ...mode, durability: 'relaxed' })).toBe('write path: EIO once [relaxed]');
  });

  it('replays one of its runs from the replay id', async () => {
    const replayed = await replayRun(memoryDriver(), 'write-path/error:3:EIO:once', true);
    expect(replayed.injected).toBe(true);
    expect(replayed.outcome.violations).toEqual([]);
    expect(replayed.outcome.errorsSurfaced).toBeGreaterThan(0);
  });
});

describe('the write path under the quick harness', () => {
  it('sweeps the reference backend with no violation, and its faults reach the writers', async () => {
    const report = await runFaultHarness(memoryDriver(), { quick: true, skip: ['real'] });
    expect(report.failures).toEqual([]);
    for (const faultClass of ['write path: EIO once', 'write path: EIO persistent']) {
      const cell = report.cells.find((c) => c.faultClass === faultClass);
      expect(cell?.faultsInjected, faultClass).toBeGreaterThan(0);
      expect(cell?.errorsSurfaced, faultClass).toBeGreaterThan(0);
    }
  });

  it('catches an abandon that drops the batch whose append failed', async () => {
    const report = await runFaultHarness(memoryAbandonDroppingFailedBatch(), { quick: true, skip: ['real'] });
    expect(report.passed).toBe(false);
    expect(new Set(report.failures.map((f) => f.kind))).toEqual(new Set(['pending-dropped']));
    expect(
      report.cells.find((c) => c.faultClass === 'write path: EIO persistent')?.lostEvents,
    ).toBeGreaterThan(0);
  });
});
