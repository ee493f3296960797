// The events a cold read has in hand, and how it gets more: the newest ones first, then a longer
// stretch from the end when a checkpoint lies further back (from the end of the file on JSONL, by
// index elsewhere), and single events named by pointers. Reads that reach the log's end must end
// at the same last event as the first one (that event carries a random batch id, so the same
// event at the same seq means the same log, nothing appended since); events read otherwise are
// vouched for by what they carry (see `ak` in records.ts) or by {@link ColdLog.unchanged}.
import { isTidemarkError, readAllEvents, type SessionEvent, type SessionStore } from '@tidemark/core';
import { parseRecord, type ThreadRecord } from './records.js';

/** Pointed seqs this close together are read as one range (a step's channel values sit side by side). */
const NEIGHBOURS = 4;

/** Events ahead of a checkpoint that its earlier writes may lie within to be read with the stretch after it. */
const NEAR = 64;

/**
 * What a `fetch…` method answers: `true` at once when the events are already held (no lookup, no
 * promise: a cold getTuple mostly holds what it asks for), else the lookup, false when it failed.
 */
export type Lookup = true | Promise<boolean>;

export class ColdLog {
  private readonly have = new Map<number, SessionEvent>();
  /** The lowest seq of the stretch held from the log's end, without a gap. */
  private from: number;
  /** Seqs of events read by a lookup that did not reach {@link ColdLog.last} (see {@link ColdLog.unchanged}). */
  private readonly loose = new Set<number>();
  /** What each event held says, parsed once (by the event itself: a seq read again is parsed again). */
  private readonly parsed = new WeakMap<SessionEvent, ThreadRecord | undefined>();

  private constructor(
    private readonly store: SessionStore,
    private readonly sessionId: string,
    /** The log's last event at the first lookup. */
    readonly last: SessionEvent,
    newest: readonly SessionEvent[],
  ) {
    this.from = newest[0]!.seq;
    for (const event of newest) this.have.set(event.seq, event);
  }

  /** The newest `n` events; `null` when the session does not exist, `undefined` when it has none. */
  static async open(store: SessionStore, sessionId: string, n: number): Promise<ColdLog | null | undefined> {
    const newest = await readOrAbsent(store, sessionId, { last: n });
    if (newest === undefined) return null;
    const last = newest[newest.length - 1];
    return last === undefined ? undefined : new ColdLog(store, sessionId, last, newest);
  }

  /** True when the event at `seq` was read apart from the log's end (see {@link ColdLog.unchanged}). */
  isLoose(seq: number): boolean {
    return this.loose.has(seq);
  }

  get(seq: number): SessionEvent | undefined {
    return this.have.get(seq);
  }

  /** {@link parseRecord} of `event` (one of this log's), parsed once however often asked for. */
  record(event: SessionEvent): ThreadRecord | undefined {
    if (this.parsed.has(event)) return this.parsed.get(event);
    const record = parseRecord(this.sessionId, event);
    this.parsed.set(event, record);
    return record;
  }

  /** The events after `seq` up to the log's last, in order (held once {@link ColdLog.fetchFrom} `seq` succeeded). */
  after(seq: number): SessionEvent[] {
    const events: SessionEvent[] = [];
    for (let s = seq + 1; s <= this.last.seq; s += 1) events.push(this.have.get(s)!);
    return events;
  }

  /**
   * Holds every event from `seq` to the log's end: read from the end, twice as far back as held at
   * least, so a walk back costs a few lookups. False when the log no longer ends at the same event.
   */
  fetchFrom(seq: number): Lookup {
    return seq >= this.from || this.from === 0 ? true : this.readFrom(seq);
  }

  private async readFrom(seq: number): Promise<boolean> {
    const start = Math.max(0, Math.min(seq, this.from - (this.last.seq - this.from + 1)));
    const count = this.last.seq - start + 1;
    const events = await readOrAbsent(this.store, this.sessionId, { fromSeq: start, last: count });
    if (events?.length !== count || events[0]!.seq !== start || !sameEvent(events[count - 1]!, this.last))
      return false;
    for (const event of events) {
      this.have.set(event.seq, event);
      this.loose.delete(event.seq);
    }
    this.from = start;
    return true;
  }

  /**
   * With the checkpoint event `head` at `at` in hand: holds the pending writes it names as stored
   * before it (`wat`), read with the stretch up to the log's end when they are close (writes of a
   * graph run with async durability come just ahead of their checkpoint's put).
   */
  fetchNear(at: number, head: SessionEvent | undefined): Lookup {
    const data = head?.data;
    const wat = typeof data === 'object' && data !== null && !Array.isArray(data) ? data.wat : undefined;
    if (!Array.isArray(wat) || wat.length === 0) return true;
    const first = Math.min(...wat.filter((seq): seq is number => typeof seq === 'number'));
    return at - first > NEAR || this.fetchFrom(first);
  }

  /** Holds the events at `seqs`; false when one is missing. */
  fetch(seqs: readonly number[]): Lookup {
    const wanted = [...new Set(seqs)].filter((seq) => !this.have.has(seq)).sort((a, b) => a - b);
    return wanted.length === 0 ? true : this.readEach(wanted);
  }

  /** Reads the events at `wanted` (ascending, none held), neighbours in one range. */
  private async readEach(wanted: readonly number[]): Promise<boolean> {
    for (let i = 0; i < wanted.length; ) {
      let j = i;
      while (j + 1 < wanted.length && wanted[j + 1]! - wanted[j]! <= NEIGHBOURS) j += 1;
      const range = await readOrAbsent(this.store, this.sessionId, {
        fromSeq: wanted[i]!,
        toSeq: wanted[j]!,
      });
      if (range === undefined) return false;
      for (const event of range) {
        if (this.have.has(event.seq)) continue;
        this.have.set(event.seq, event);
        this.loose.add(event.seq);
      }
      if (wanted.slice(i, j + 1).some((seq) => !this.have.has(seq))) return false;
      i = j + 1;
    }
    return true;
  }

  /** True when the log still ends with {@link ColdLog.last}: every event read since is of this log. */
  async unchanged(): Promise<boolean> {
    const now = await lastEvent(this.store, this.sessionId, this.last.seq);
    return now !== null && now !== undefined && sameEvent(now, this.last);
  }
}

function sameEvent(a: SessionEvent, b: SessionEvent): boolean {
  return (
    a.seq === b.seq &&
    a.time === b.time &&
    a.type === b.type &&
    JSON.stringify(a.data) === JSON.stringify(b.data)
  );
}

/** The events of `range`, `undefined` when the session does not exist. */
async function readOrAbsent(
  store: SessionStore,
  sessionId: string,
  range: { fromSeq?: number; toSeq?: number; last?: number },
): Promise<SessionEvent[] | undefined> {
  try {
    // In one array: the events of a page come without a promise each (a cold read's few lookups
    // are most of its time).
    return await readAllEvents(store, sessionId, range);
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return undefined;
    throw error;
  }
}

/**
 * The log's last event when it is at `fromSeq` or later (one indexed lookup on SQLite and
 * PostgreSQL, a read of the file's end on JSONL); `undefined` when the log ends before `fromSeq`,
 * `null` when the session does not exist. A `fromSeq` near the end makes the lookup cheaper: the
 * store need not look before it.
 */
export async function lastEvent(
  store: SessionStore,
  sessionId: string,
  fromSeq = 0,
): Promise<SessionEvent | null | undefined> {
  const events = await readOrAbsent(store, sessionId, { fromSeq, last: 1 });
  return events === undefined ? null : events[0];
}
