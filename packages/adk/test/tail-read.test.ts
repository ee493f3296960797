// A getSession with numRecentEvents or afterTimestamp reads the log's end only (the newest
// snapshot of the session's state and the events after it, widened as far as the question needs).
// Whatever it reads, it must answer what the whole log answers: same events in the same order,
// replacements applied, the same state, on every backend and for every window size.
import { createEvent, createEventActions } from '@google/adk';
import { testBackends } from '@tidemark/test-hosts';
import { afterAll, describe, expect, it } from 'vitest';
import { TidemarkSessionService } from '../src/index.js';
import { SNAPSHOT_EVERY } from '../src/records.js';

const key = { appName: 'app', userId: 'u', sessionId: 'long' };
const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe.each(await testBackends('adk'))('tail reads on $name', (backend) => {
  afterAll(() => backend.cleanup());

  it('answer what the whole log answers, replacements and snapshots included', {
    timeout: 120_000,
  }, async () => {
    const service = new TidemarkSessionService({ store: await backend.open() });
    const session = await service.createSession({ ...key, state: { start: true } });
    const total = SNAPSHOT_EVERY * 2 + 7;
    for (let i = 0; i < total; i++) {
      const stateDelta: Record<string, unknown> = {
        [`k${i % 5}`]: i,
        ...(i % 9 === 0 && { 'user:seen': i }),
      };
      await service.appendEvent({
        session,
        event: createEvent({ id: `e${i}`, timestamp: 1000 + i, actions: createEventActions({ stateDelta }) }),
      });
      // Now and then an event is appended again with its id: a replacement, in its place.
      if (i % 7 === 3) {
        const old = session.events[Math.max(0, i - 2)]!;
        await service.appendEvent({ session, event: { ...old, invocationId: `again-${i}` } });
      }
    }
    const whole = (await service.getSession(key))!;
    expect(whole.events.map((e) => e.id)).toEqual(Array.from({ length: total }, (_, i) => `e${i}`));
    expect(plain(whole.events)).toEqual(plain(session.events));
    for (const n of [1, 2, 3, 10, SNAPSHOT_EVERY, SNAPSHOT_EVERY + 1, total - 1, total, total + 5]) {
      const tail = (await service.getSession({ ...key, config: { numRecentEvents: n } }))!;
      expect(plain(tail.events), `numRecentEvents ${n}`).toEqual(plain(whole.events.slice(-n)));
      expect(tail.state, `state with numRecentEvents ${n}`).toEqual(whole.state);
      expect(tail.lastUpdateTime).toBe(whole.lastUpdateTime);
    }
    for (const after of [999, 1000, 1005, 1000 + total - 2, 1000 + total]) {
      const tail = (await service.getSession({ ...key, config: { afterTimestamp: after } }))!;
      expect(plain(tail.events), `afterTimestamp ${after}`).toEqual(
        plain(whole.events.filter((e) => e.timestamp > after)),
      );
      expect(tail.state).toEqual(whole.state);
    }
  });
});
