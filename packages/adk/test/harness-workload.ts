// The adapter's workload for the fault harness (harness.test.ts): an ADK app's life through
// TidemarkSessionService, stopped at the first call that rejects, with a ledger of what was
// acknowledged and what was in doubt when it stopped; and the checks that a store reopened after
// the fault (or rebuilt from a crash state) keeps every acknowledged event once and in order, every
// acknowledged state and shared key, and takes the next event.
import { createEvent, createEventActions, type Session } from '@google/adk';
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { TidemarkSessionService } from '../src/index.js';

const APP = 'app';
const key = (sessionId: string) => ({ appName: APP, userId: 'u', sessionId });

/** One write of the workload, as the ledger keeps it. */
interface Write {
  session: string;
  /** The event appended (absent for createSession). */
  eventId?: string;
  /** Own state keys and shared keys (with their prefix) the write sets. */
  delta: Record<string, unknown>;
}

/** What was acknowledged up to some instant, and the write in progress then. */
export interface LedgerSnapshot {
  acked: Write[];
  pending: Write | undefined;
}

export class Ledger {
  readonly acked: Write[] = [];
  pending: Write | undefined;
  snapshot(): LedgerSnapshot {
    return { acked: [...this.acked], pending: this.pending };
  }
}

const WRITES: Write[] = [
  { session: 'main', delta: { count: 0, 'user:lang': 'de' } },
  ...Array.from({ length: 6 }, (_, i) => ({
    session: 'main',
    eventId: `e${i}`,
    delta: {
      count: i + 1,
      ...(i % 2 === 0 && { 'app:theme': `t${i}` }),
      ...(i === 3 && { 'user:lang': 'fr' }),
    },
  })),
  { session: 'side', delta: {} },
  { session: 'side', eventId: 's0', delta: { 'app:theme': 'side', note: 'x' } },
  { session: 'main', eventId: 'e6', delta: { 'temp:scratch': 1, done: true } },
];

/** Runs the workload until a call rejects; violations are rejections that are not TidemarkErrors. */
export async function runWorkload(
  store: SessionStore,
  ledger: Ledger,
): Promise<{ rejected?: unknown; violations: string[] }> {
  const service = new TidemarkSessionService({ store });
  const sessions = new Map<string, Session>();
  for (const write of WRITES) {
    ledger.pending = write;
    try {
      if (write.eventId === undefined)
        sessions.set(
          write.session,
          await service.createSession({ ...key(write.session), state: write.delta }),
        );
      else {
        const event = createEvent({
          id: write.eventId,
          timestamp: 1000 + ledger.acked.length,
          actions: createEventActions({ stateDelta: write.delta }),
        });
        await service.appendEvent({ session: sessions.get(write.session)!, event });
      }
      ledger.acked.push(write);
      ledger.pending = undefined;
      // Reads between writes must answer or reject typed, never report an acknowledged session absent.
      const seen = await service.getSession({ ...key(write.session), config: { numRecentEvents: 2 } });
      if (seen === undefined)
        return { violations: [`getSession reported ${write.session} absent after it was acknowledged`] };
      await service.listSessions({ appName: APP, userId: 'u' });
    } catch (error) {
      return {
        rejected: error,
        violations: isTidemarkError(error) ? [] : [`untyped rejection: ${String(error)}`],
      };
    }
  }
  return { violations: [] };
}

const ownOf = (delta: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(delta).filter(([k]) => !k.includes(':')));

/** What a store must hold after the writes of `snapshot` (the pending one landed or not). */
export async function checkStore(
  store: SessionStore,
  snapshot: LedgerSnapshot,
  where: string,
): Promise<string[]> {
  const violations: string[] = [];
  const service = new TidemarkSessionService({ store });
  const { acked, pending } = snapshot;
  const names = [...new Set([...acked, ...(pending ? [pending] : [])].map((w) => w.session))];
  const sharedSeen: Record<string, unknown> = {};
  for (const name of names) {
    let session: Session | undefined;
    try {
      session = await service.getSession(key(name));
    } catch (error) {
      violations.push(`${where}: getSession(${name}) rejected after the fault was lifted: ${String(error)}`);
      continue;
    }
    const mine = acked.filter((w) => w.session === name);
    if (session === undefined) {
      if (mine.length > 0) violations.push(`${where}: acknowledged session ${name} is missing`);
      continue;
    }
    const ids = session.events.map((e) => e.id);
    const ackedIds = mine.flatMap((w) => (w.eventId ? [w.eventId] : []));
    const withPending =
      pending?.session === name && pending.eventId ? [...ackedIds, pending.eventId] : undefined;
    const landed = withPending !== undefined && JSON.stringify(ids) === JSON.stringify(withPending);
    if (!landed && JSON.stringify(ids) !== JSON.stringify(ackedIds))
      violations.push(
        `${where}: ${name} holds events ${JSON.stringify(ids)}, acknowledged ${JSON.stringify(ackedIds)}`,
      );
    const own: Record<string, unknown> = {};
    for (const w of [
      ...mine,
      ...(landed || (pending?.session === name && !pending.eventId) ? [pending!] : []),
    ])
      Object.assign(own, ownOf(w.delta));
    const stateOwn = Object.fromEntries(Object.entries(session.state).filter(([k]) => !k.includes(':')));
    if (JSON.stringify(Object.entries(stateOwn).sort()) !== JSON.stringify(Object.entries(own).sort()))
      violations.push(`${where}: ${name} state ${JSON.stringify(stateOwn)}, expected ${JSON.stringify(own)}`);
    for (const [k, v] of Object.entries(session.state)) if (k.includes(':')) sharedSeen[k] = v;
    const tail = await service.getSession({ ...key(name), config: { numRecentEvents: 3 } });
    if (
      JSON.stringify(tail?.events.map((e) => e.id)) !== JSON.stringify(ids.slice(-3)) ||
      JSON.stringify(tail?.state) !== JSON.stringify(session.state)
    )
      violations.push(`${where}: ${name} read from its end differs from the whole session`);
  }
  // Shared keys: the last acknowledged value, or the pending write's (it may have been stored first).
  const lastAcked: Record<string, unknown> = {};
  for (const w of acked)
    for (const [k, v] of Object.entries(w.delta))
      if (k.startsWith('app:') || k.startsWith('user:')) lastAcked[k] = v;
  for (const [k, v] of Object.entries(lastAcked)) {
    const ok = sharedSeen[k] === v || (pending !== undefined && pending.delta[k] === sharedSeen[k]);
    if (!ok)
      violations.push(
        `${where}: shared ${k} is ${JSON.stringify(sharedSeen[k])}, last acknowledged ${JSON.stringify(v)}`,
      );
  }
  return violations;
}

/** The store takes the next event of an acknowledged session, and reads it back. */
export async function continueWorkload(
  store: SessionStore,
  snapshot: LedgerSnapshot,
  where: string,
): Promise<string[]> {
  if (!snapshot.acked.some((w) => w.session === 'main')) return [];
  const service = new TidemarkSessionService({ store });
  try {
    const session = (await service.getSession(key('main')))!;
    await service.appendEvent({ session, event: createEvent({ id: 'next', timestamp: 9999 }) });
    const back = await service.getSession({ ...key('main'), config: { numRecentEvents: 1 } });
    return back?.events[0]?.id === 'next' ? [] : [`${where}: the next event did not read back`];
  } catch (error) {
    return [`${where}: the store refused the next event: ${String(error)}`];
  }
}
