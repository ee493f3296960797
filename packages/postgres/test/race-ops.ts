// The calls of the snapshot-race tests (snapshot-races.test.ts): what one host does to a session
// while another host writes it, and the answers a race may give. The child fixture
// (fixtures/racer.mjs) runs the same calls in another process.
import { isTidemarkError, type SessionEvent, type SessionStore, type StoreMaintenance } from '@tidemark/core';

/** A store with verify and repair. */
export type Host = SessionStore & StoreMaintenance;

/** What the writing host does: its first append (after its own create), an append, an update or a delete. */
export const WRITES = ['firstAppend', 'append', 'update', 'delete'] as const;
export type Write = (typeof WRITES)[number];

/** What the other host does meanwhile: the calls that decide absence or damage. */
export const RACERS = ['update', 'delete', 'has', 'load', 'loadCut', 'read', 'repair'] as const;
export type Racer = (typeof RACERS)[number];

/** Answers a race may give: success, or the typed answers of a lost race. Anything else is a bug. */
export const RACE_ANSWERS: ReadonlySet<string> = new Set(['ok', 'CONFLICT', 'NOT_FOUND']);

/** A one-event batch at `seq`, ending a turn (so the session is never interrupted). */
export function batchAt(seq: number, writer: string): SessionEvent[] {
  return [{ seq, type: 'turn/end', time: new Date().toISOString(), data: { writer, seq } }];
}

/** Runs `call` on `store` for session `id`; its answer: 'ok' or the TidemarkError's code. */
export async function answerOf(
  store: Host,
  call: Write | Racer,
  id: string,
  writer: string,
): Promise<string> {
  try {
    switch (call) {
      case 'firstAppend':
        await store.append(id, batchAt(0, writer));
        break;
      case 'append':
        await store.append(id, batchAt(1, writer));
        break;
      case 'update':
        await store.update(id, { title: `by ${writer}` });
        break;
      case 'delete':
        await store.delete(id);
        break;
      case 'has':
        await store.has(id);
        break;
      case 'load':
        await store.load(id);
        break;
      case 'loadCut':
        await store.load(id, { tail: 'cut' });
        break;
      case 'read':
        for await (const _ of store.read(id)) {
          // drained: every page is judged
        }
        break;
      case 'repair':
        await store.repair(id, { tail: 'cut' });
        break;
    }
    return 'ok';
  } catch (error) {
    if (isTidemarkError(error)) return error.code;
    throw error;
  }
}
