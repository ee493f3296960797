import { replayRun, runFaultHarness } from '@tidemark/faults';
import { describe, expect, it } from 'vitest';
import { jsonlEnotdirAsNotFound, jsonlWithoutDirSync } from './fixtures/broken-jsonl.js';

// A reported violation replays from its id (faults' own report tests check the ids and commands).
describe('--replay of a reported violation', () => {
  it.each([
    ['an injected error', jsonlEnotdirAsNotFound, ['real', 'crash'] as const],
    ['a crash state', jsonlWithoutDirSync, ['real', 'errors'] as const],
  ])(
    'gives the same violation again for %s',
    async (_what, makeDriver, skip) => {
      const report = await runFaultHarness(makeDriver(), { quick: true, skip, stopAfterFailures: 1 });
      const failure = report.failures[0]!;
      expect(failure.reproduction?.replayId).toBeDefined();
      const replay = await replayRun(makeDriver(), failure.reproduction!.replayId!, true);
      expect(replay.fault).toBe(failure.fault);
      expect(replay.outcome.violations[0]).toEqual({
        kind: failure.kind,
        detail: failure.detail,
        ...(failure.step !== undefined && { step: failure.step }),
      });
    },
    300_000,
  );
});
