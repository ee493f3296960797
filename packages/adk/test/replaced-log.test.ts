// An appendEvent planned on a session that another host deletes and writes again to the same
// length before the append lands: the append's seq check passes, so what the write planned on the
// old log (the snapshot of the session's own state it writes every SNAPSHOT_EVERY events, and the
// seq of the event it replaces) must be checked by every reader against the new log. Deterministic:
// a store wrapper lets host A delete and rewrite the session right after host B's reads. The wrapper
// drops `append(…, { after })` and shows no capability, as a store without the check; on one with
// it, the append is refused instead (append-after.test.ts).
import { createEvent, createEventActions, type Event } from '@google/adk';
import { openMemoryStore } from '@tidemark/memory';
import { withInterleaving } from '@tidemark/test-hosts';
import { describe, expect, it } from 'vitest';
import { TidemarkSessionService } from '../src/index.js';
import { SNAPSHOT_EVERY } from '../src/records.js';

const key = { appName: 'app', userId: 'u', sessionId: 'chat' };
const event = (id: string, stateDelta: Record<string, unknown>): Event =>
  createEvent({ id, timestamp: 1000, actions: createEventActions({ stateDelta }) });

/** Writes the session anew with `SNAPSHOT_EVERY - 1` events setting `era`, the last one with id `last`. */
async function writeSession(service: TidemarkSessionService, era: string) {
  const session = await service.createSession({ ...key, state: { era } });
  for (let i = 0; i < SNAPSHOT_EVERY - 1; i++) {
    const id = i === SNAPSHOT_EVERY - 2 ? 'last' : `${era}-${i}`;
    await service.appendEvent({ session, event: event(id, { [`${era}-${i}`]: i }) });
  }
  return session;
}

describe('a session deleted and written again to the same length between a read and an append', () => {
  it('keeps the new session whole: a stale snapshot and a stale replacement are not taken for it', async () => {
    const inner = await openMemoryStore();
    const a = new TidemarkSessionService({ store: inner });
    const b = withInterleaving(inner);
    const serviceB = new TidemarkSessionService({ store: b.store });
    const old = await writeSession(a, 'old');
    const sessionB = (await serviceB.getSession(key))!; // B's object is the old session
    // After B's second read: B has read the log's end and the old state its snapshot is built from.
    b.arm(async () =>
      b.arm(async () => {
        await a.deleteSession(key);
        await writeSession(a, 'new');
      }),
    );
    // B appends again the old session's last event (a replacement, planned on the old log) with
    // the delta that makes its batch carry a snapshot.
    const again = {
      ...old.events[old.events.length - 1]!,
      actions: createEventActions({ stateDelta: { by: 'b' } }),
    };
    await serviceB.appendEvent({ session: sessionB, event: again });

    const whole = (await a.getSession(key))!;
    const expectedIds = [...Array.from({ length: SNAPSHOT_EVERY - 2 }, (_, i) => `new-${i}`), 'last'];
    expect(whole.events.map((e) => e.id)).toEqual(expectedIds);
    // The event B appended replaced 'last' of the new log, which is at the seq B planned on.
    expect(whole.events[whole.events.length - 1]!.actions.stateDelta).toEqual({ by: 'b' });
    const expectedState: Record<string, unknown> = { era: 'new', by: 'b' };
    for (let i = 0; i < SNAPSHOT_EVERY - 1; i++) expectedState[`new-${i}`] = i;
    expect(whole.state).toEqual(expectedState);
    for (const n of [1, 3, SNAPSHOT_EVERY]) {
      const tail = (await new TidemarkSessionService({ store: inner }).getSession({
        ...key,
        config: { numRecentEvents: n },
      }))!;
      expect(tail.events.map((e) => e.id)).toEqual(expectedIds.slice(-n));
      expect(tail.state).toEqual(expectedState);
    }
    // No key of the old session came back through B's planned snapshot.
    expect(Object.keys(whole.state).some((k) => k.startsWith('old'))).toBe(false);
  });
});
