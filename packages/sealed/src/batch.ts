// The batch-sealed form (`ts2`): the events of one appended batch sealed as one AEAD message, so
// that opening a session costs one AES-GCM operation per batch instead of one per event (node:crypto
// pays a fixed few µs per operation, which for small events was most of a sealed load).
//
// A batch of n >= 2 events at seqs s..s+n-1 (cut into several such groups when large, see
// MAX_GROUP_BYTES) is stored as:
//   seq s:        { "tidemark:sealed": "ts2.<keyId>.<n>.<iv>.<ct>" }   (the head)
//   seq s+i:      { "tidemark:sealed": "ts2.<keyId>.@<i>.<iv>" }      (members, 1 <= i < n)
// The plaintext is the JSON array of the n events' `[type, time, data]`, in seq order; the
// associated data is `ts2 \0 batch \0 <sessionId> \0 <s> \0 <n> \0 <keyId>`. The IV is synthetic
// (as for ts1), so the same batch seals to the same bytes and an in-doubt retry stays idempotent.
// Each event's type and time are authenticated inside the plaintext, not bound as associated data,
// so that the head alone proves every event of its batch: a member whose stored type or time
// differs from the head's is CORRUPT at its own seq, and a batch whose last events were cut (a
// load with `tail: 'cut'` moves the interrupted tail to quarantine, and may cut inside a batch)
// still opens. A member carries only its index and the head's IV: its content is the head's, at its
// position. The IV, an HMAC of the batch's place and plaintext, makes a member's bytes name that
// content, so that an inner store comparing stored records byte for byte (an idempotent retry,
// `append(…, { after })`) never takes one batch's member for another's.
// A batch of one event is sealed on its own (`ts1`), as every event was before ts2.
import { type JsonValue, type PreparedEvent, type SessionEvent, TidemarkError } from '@tidemark/core';
import { type SealedFailure, sealedCorrupt } from './errors.js';
import {
  BATCH_SEALED_VERSION,
  currentKeys,
  openJson,
  openRecord,
  type ParsedEvent,
  type ParsedHead,
  type ParsedMember,
  parseStoredEvent,
  preparedJson,
  SEALED_KEY,
  sealBody,
  sealDataJson,
  sealedValueOf,
} from './format.js';
import { derivedKeys, type Keyring } from './keyring.js';

/**
 * The most plaintext bytes one sealed group holds (and at most the store's event limit): a larger
 * batch is sealed as several groups, so that no head outgrows what the inner store accepts as one
 * event, and a read that starts inside a batch opens at most this much more than it asked for.
 */
export const MAX_GROUP_BYTES = 1024 * 1024;

/** One event to seal: the event (type, time, seq) and its data as JSON text. */
export interface EventToSeal {
  event: SessionEvent;
  json: string;
}

function groupAad(sessionId: string, start: number, count: number, keyId: string): string {
  return `${BATCH_SEALED_VERSION}\0batch\0${sessionId}\0${start}\0${count}\0${keyId}`;
}

function entryOf(item: EventToSeal): string {
  return `[${JSON.stringify(item.event.type)},${JSON.stringify(item.event.time)},${item.json}]`;
}

/**
 * Seals a contiguous batch under the keyring's current key: groups of consecutive events of at
 * most `maxBytes` plaintext bytes (default {@link MAX_GROUP_BYTES}) as ts2, a group of one as
 * ts1. Deterministic: the same batch gives the same records.
 */
export function sealBatch(
  keyring: Keyring,
  sessionId: string,
  items: readonly EventToSeal[],
  maxBytes = MAX_GROUP_BYTES,
): SessionEvent[] {
  // One event: sealed on its own, with nothing to group (the common durable one-event append).
  if (items.length === 1) return [sealDataJson(keyring, sessionId, items[0]!.event, items[0]!.json)];
  const out: SessionEvent[] = [];
  let group: EventToSeal[] = [];
  let entries: string[] = [];
  let bytes = 2; // the array's brackets
  const flush = () => {
    if (group.length === 1) out.push(sealDataJson(keyring, sessionId, group[0]!.event, group[0]!.json));
    else if (group.length > 1) out.push(...sealGroup(keyring, sessionId, group, `[${entries.join(',')}]`));
    group = [];
    entries = [];
    bytes = 2;
  };
  for (const item of items) {
    const entry = entryOf(item);
    const size = Buffer.byteLength(entry) + 1;
    if (group.length > 0 && bytes + size > maxBytes) flush();
    group.push(item);
    entries.push(entry);
    bytes += size;
  }
  flush();
  return out;
}

function sealGroup(
  keyring: Keyring,
  sessionId: string,
  group: readonly EventToSeal[],
  plaintext: string,
): SessionEvent[] {
  const keyId = keyring.currentId;
  const start = group[0]!.event.seq;
  const body = sealBody(currentKeys(keyring), groupAad(sessionId, start, group.length, keyId), plaintext);
  const iv = body.slice(0, body.indexOf('.'));
  return group.map(({ event }, i) => ({
    seq: event.seq,
    type: event.type,
    time: event.time,
    data: {
      [SEALED_KEY]:
        i === 0
          ? `${BATCH_SEALED_VERSION}.${keyId}.${group.length}.${body}`
          : `${BATCH_SEALED_VERSION}.${keyId}.@${i}.${iv}`,
    },
  }));
}

/**
 * Seals events core prepared (their data JSON as prepared), or what redaction made of them, in
 * groups of at most `maxEventBytes` (the plaintext event limit) and {@link MAX_GROUP_BYTES}.
 */
export function sealPreparedBatch(
  keyring: Keyring,
  sessionId: string,
  prepared: readonly PreparedEvent[],
  events: readonly SessionEvent[],
  maxEventBytes: number,
): SessionEvent[] {
  const items = events.map((event, i) => ({ event, json: preparedJson(prepared[i]!, event) }));
  return sealBatch(keyring, sessionId, items, Math.min(maxEventBytes, MAX_GROUP_BYTES));
}

/**
 * Seals whole events (their data serialized here): as {@link sealBatch} does, or, given `runs`
 * (see {@link sealedRuns}), run by run, each run of two or more as one batch whatever its size.
 */
export function sealEvents(
  keyring: Keyring,
  sessionId: string,
  events: readonly SessionEvent[],
  runs?: readonly number[],
): SessionEvent[] {
  const items = events.map((event) => ({ event, json: JSON.stringify(event.data) }));
  if (runs === undefined) return sealBatch(keyring, sessionId, items);
  const out: SessionEvent[] = [];
  let at = 0;
  for (const size of runs) {
    out.push(...sealBatch(keyring, sessionId, items.slice(at, at + size), Number.POSITIVE_INFINITY));
    at += size;
  }
  if (at !== items.length)
    throw new TidemarkError('INVALID', `sealEvents: runs cover ${at} of ${items.length} events`);
  return out;
}

/**
 * How the stored records of a session (from seq 0, each a sealed record) are sealed: the size of
 * each run, a batch sealed as one (as many of its records as are stored) or a record sealed on its
 * own. Re-sealing run by run ({@link sealEvents}) keeps each batch the size the inner store took.
 */
export function sealedRuns(sessionId: string, events: readonly SessionEvent[]): number[] {
  const runs: number[] = [];
  let head = -1;
  let count = 0;
  for (const event of events) {
    const parsed = parseStoredEvent(sessionId, event);
    if (parsed.kind === 'member' && event.seq - parsed.index === head && parsed.index < count) {
      runs[runs.length - 1]!++;
      continue;
    }
    runs.push(1);
    head = parsed.kind === 'head' ? event.seq : -1;
    count = parsed.kind === 'head' ? parsed.count : 0;
  }
  return runs;
}

/** An opened group: where it starts, how many records it holds, under which key, and their entries. */
interface OpenGroup {
  start: number;
  count: number;
  keyId: string;
  iv: string;
  /** `ts2.<keyId>.@`: what each later record's text starts with. */
  memberPrefix: string;
  entries: readonly (readonly [string, string, JsonValue])[];
}

function isEntry(value: unknown): value is [string, string, JsonValue] {
  return (
    Array.isArray(value) && value.length === 3 && typeof value[0] === 'string' && typeof value[1] === 'string'
  );
}

/**
 * Opens the sealed events of one session in seq order, of either form. A ts2 member opens with its
 * batch's first record (its head), which must have been opened before it by the same opener: a
 * sequence that starts inside a batch (a read from a seq, or of the last events) gives the head
 * first, see {@link SealedEventOpener.headSeqFor}.
 */
export class SealedEventOpener {
  readonly #keyring: Keyring;
  readonly #sessionId: string;
  #group: OpenGroup | undefined;

  constructor(keyring: Keyring, sessionId: string) {
    this.#keyring = keyring;
    this.#sessionId = sessionId;
  }

  /**
   * The seq of the head that `event` opens with, when `event` is a ts2 member of a batch whose
   * head this opener has not opened; undefined otherwise (including for a record that is not
   * sealed or is malformed: {@link open} reports it).
   */
  headSeqFor(event: SessionEvent): number | undefined {
    let parsed: ParsedEvent;
    try {
      parsed = parseStoredEvent(this.#sessionId, event);
    } catch {
      return undefined;
    }
    if (parsed.kind !== 'member') return undefined;
    const head = event.seq - parsed.index;
    // No head before seq 0: open() reports the record as not in its batch.
    return head < 0 || this.#group?.start === head ? undefined : head;
  }

  /**
   * Opens `event` when it is the first record of a batch sealed as one (then later records of that
   * batch open after it); does nothing when it is not (a later record that names it as its batch's
   * first then fails in {@link open}, at its own seq).
   * @throws TidemarkError CORRUPT at its seq when it is such a record and does not open.
   */
  openHead(event: SessionEvent): void {
    let parsed: ParsedEvent;
    try {
      parsed = parseStoredEvent(this.#sessionId, event);
    } catch {
      return;
    }
    if (parsed.kind === 'head') {
      this.#group = undefined;
      this.#openHead(event, parsed);
    }
  }

  /**
   * The opened event.
   * @throws TidemarkError CORRUPT with `sessionId` and `location.seq`: tampered (including a member
   *   not in the batch before it, or whose type or time differ from what the head sealed), unknown
   *   key id, plaintext or malformed.
   */
  open(event: SessionEvent): SessionEvent {
    // The common case first: the next record of the batch opened last, stored exactly as sealed
    // (compared as text, without parsing it; anything else takes the full path below).
    const group = this.#group;
    if (group !== undefined) {
      const index = event.seq - group.start;
      if (
        index > 0 &&
        index < group.count &&
        sealedValueOf(event.data) === `${group.memberPrefix}${index}.${group.iv}`
      ) {
        return this.#entry(event, group, index);
      }
    }
    const parsed = parseStoredEvent(this.#sessionId, event);
    if (parsed.kind === 'member') return this.#openMember(event, parsed);
    // Anything else ends the batch before it, whose last members may have been cut.
    this.#group = undefined;
    if (parsed.kind === 'record') return openRecord(this.#keyring, this.#sessionId, event, parsed);
    return this.#openHead(event, parsed);
  }

  #corrupt(seq: number, detail: string, failure: SealedFailure = 'tampered'): TidemarkError {
    return sealedCorrupt(failure, this.#sessionId, { seq }, detail);
  }

  #openHead(event: SessionEvent, parsed: ParsedHead): SessionEvent {
    const place = { seq: event.seq };
    const aad = groupAad(this.#sessionId, event.seq, parsed.count, parsed.keyId);
    const value = openJson(this.#keyring, parsed, aad, this.#sessionId, place, 'event data');
    if (!Array.isArray(value) || value.length !== parsed.count || !value.every(isEntry)) {
      throw this.#corrupt(event.seq, `the opened batch does not hold ${parsed.count} events`, 'malformed');
    }
    const group: OpenGroup = {
      start: event.seq,
      count: parsed.count,
      keyId: parsed.keyId,
      iv: parsed.ivText,
      memberPrefix: `${BATCH_SEALED_VERSION}.${parsed.keyId}.@`,
      entries: value,
    };
    const opened = this.#entry(event, group, 0);
    this.#group = group;
    return opened;
  }

  #openMember(event: SessionEvent, { index, keyId, iv }: ParsedMember): SessionEvent {
    const group = this.#group;
    const head = event.seq - index;
    if (group === undefined || group.start !== head || index >= group.count) {
      throw this.#corrupt(
        event.seq,
        `record ${index} of a batch sealed at seq ${head}, which is not the batch opened before it`,
      );
    }
    if (group.iv !== iv)
      throw this.#corrupt(event.seq, `record of another batch than the one sealed at seq ${head}`);
    if (group.keyId !== keyId) {
      throw this.#corrupt(
        event.seq,
        `record of a batch sealed under key id ${JSON.stringify(group.keyId)}, names ${JSON.stringify(keyId)}`,
        derivedKeys(this.#keyring, keyId) === undefined ? 'unknown-key' : 'tampered',
      );
    }
    return this.#entry(event, group, index);
  }

  #entry(event: SessionEvent, group: OpenGroup, index: number): SessionEvent {
    const [type, time, data] = group.entries[index]!;
    if (type !== event.type || time !== event.time) {
      throw this.#corrupt(event.seq, 'type or time differ from what its batch sealed');
    }
    return { seq: event.seq, type, time, data };
  }
}

/**
 * Opens one sealed event: a record sealed on its own, or the first record of a batch. A later
 * record of a batch opens only with its batch: use {@link SealedEventOpener} (INVALID here).
 * @throws TidemarkError CORRUPT with `sessionId` and `location.seq` (see {@link SealedEventOpener.open}).
 */
export function openEvent(keyring: Keyring, sessionId: string, event: SessionEvent): SessionEvent {
  const opener = new SealedEventOpener(keyring, sessionId);
  const head = opener.headSeqFor(event);
  if (head !== undefined) {
    throw new TidemarkError(
      'INVALID',
      `session ${sessionId} seq ${event.seq}: a record of the batch sealed at seq ${head} opens with that batch (SealedEventOpener, or openEvents from seq ${head})`,
      { sessionId, location: { seq: event.seq } },
    );
  }
  return opener.open(event);
}

/** Opens a contiguous run of sealed events whose first is not inside a batch begun before it. */
export function openEvents(
  keyring: Keyring,
  sessionId: string,
  events: readonly SessionEvent[],
): SessionEvent[] {
  const opener = new SealedEventOpener(keyring, sessionId);
  return events.map((event) => opener.open(event));
}
