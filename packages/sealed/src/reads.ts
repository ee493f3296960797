// Reading sealed records through the inner store, for the sealed store's reads and its append
// checks: a read may start inside a batch sealed as one, whose first record must then be read and
// opened first; and the last record of a session read or written is kept as a hint for `after`.
import {
  errors,
  type ReadRange,
  type SessionEvent,
  type SessionStore,
  sameEvent,
  TidemarkError,
} from '@tidemark/core';
import { SealedEventOpener } from './batch.js';
import type { Keyring } from './keyring.js';

/** A record as the inner store holds it, and opened. */
export interface StoredAndOpened {
  stored: SessionEvent;
  opened: SessionEvent;
}

/** Sessions whose last record a sealed store keeps (the `after` of its next append, as stored). */
const LAST_RECORD_SESSIONS = 256;

/**
 * Per session, the last record a sealed store appended or read, as stored and opened: a hint for
 * `after` (the last record of a batch sealed as one is a later record of it, whose stored form does
 * not follow from the event alone). Never trusted: the inner store checks `after` as handed over.
 * Bounded: the session used longest ago is dropped first.
 */
export class LastRecords {
  readonly #records = new Map<string, StoredAndOpened>();

  get(id: string): StoredAndOpened | undefined {
    return this.#records.get(id);
  }

  remember(id: string, stored: SessionEvent, opened: SessionEvent): void {
    this.#records.delete(id);
    this.#records.set(id, { stored, opened });
    if (this.#records.size > LAST_RECORD_SESSIONS) {
      const oldest = this.#records.keys().next().value;
      if (oldest !== undefined) this.#records.delete(oldest);
    }
  }

  forget(id: string): void {
    this.#records.delete(id);
  }

  clear(): void {
    this.#records.clear();
  }
}

/**
 * When `first` (the first record of a read from `inner`) is a later record of a batch sealed as
 * one, opens that batch's first record with `opener`, so that `first` and the rest of the batch
 * open after it; otherwise does nothing. The batch's first record and the records up to `first`
 * are read in one call, so that they are one version of the session; when the record at
 * `first.seq` is no longer `first`, the session changed between the two reads: CONFLICT
 * (retryable), never a false CORRUPT.
 */
export async function openBatchOf(
  inner: SessionStore,
  opener: SealedEventOpener,
  id: string,
  first: SessionEvent,
): Promise<void> {
  const head = opener.headSeqFor(first);
  if (head === undefined) return;
  const run: SessionEvent[] = [];
  try {
    for await (const event of inner.read(id, { fromSeq: head, toSeq: first.seq })) run.push(event);
  } catch (error) {
    if (!(error instanceof TidemarkError) || error.code !== 'NOT_FOUND') throw error;
  }
  const last = run[run.length - 1];
  if (last === undefined || !sameEvent(last, first)) {
    throw errors.conflict(
      `session ${id} changed while it was read (at seq ${first.seq}): read it again`,
      id,
      true,
    );
  }
  opener.openHead(run[0]!);
}

/** Opens one stored record of a session, with its batch's first record when it is a later one. */
export async function openStoredRecord(
  inner: SessionStore,
  keyring: Keyring,
  id: string,
  stored: SessionEvent,
): Promise<SessionEvent> {
  const opener = new SealedEventOpener(keyring, id);
  await openBatchOf(inner, opener, id, stored);
  return opener.open(stored);
}

/**
 * The records of `range`, as stored and opened (the range may start inside a batch sealed as one);
 * the last one is remembered in `last` once the read is done.
 */
export function openedPairs(
  inner: SessionStore,
  keyring: Keyring,
  id: string,
  range: ReadRange | undefined,
  last: LastRecords,
): AsyncIterable<StoredAndOpened> {
  return {
    async *[Symbol.asyncIterator]() {
      const opener = new SealedEventOpener(keyring, id);
      let pair: StoredAndOpened | undefined;
      for await (const event of inner.read(id, range)) {
        if (pair === undefined) await openBatchOf(inner, opener, id, event);
        pair = { stored: event, opened: opener.open(event) };
        yield pair;
      }
      if (pair !== undefined) last.remember(id, pair.stored, pair.opened);
    },
  };
}
