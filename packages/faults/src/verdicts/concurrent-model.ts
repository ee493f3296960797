// The reference model of two writers on one session (contract §4, "One writer"). With one writer
// the model is a list: what was acknowledged, in order, and at most one batch in doubt after it.
// With two, each writer appends where it believes the log ends, so several batches may be tried
// at one seq: the model keeps every batch tried (by writer and first seq) with what became of it,
// and judges a log by whether it is made of whole tried batches, each at its own seq, holding
// every acknowledged one and none that was refused.
import type { JsonValue, SessionEvent } from '@tidemark/core';
import { canonicalEvent, sessionId } from '../workload/workload.js';

/** What became of a tried batch. */
export type RaceState =
  /** The append resolved: it must be in the log, and no other batch may hold its seqs. */
  | 'acked'
  /** Refused with CONFLICT (nothing written, contract §4): it must not be in the log. */
  | 'refused'
  /** In flight, or failed with another error (or at a crash): whole or absent. */
  | 'doubt';

/** One batch a writer tried. A writer's batch at a seq is always the same (see {@link raceEvents}). */
export interface RaceBatch {
  writer: string;
  /** Seq of its first event. */
  from: number;
  /** Canonical text of its events. */
  events: readonly string[];
  state: RaceState;
}

/** How a log compares with the tried batches of a session. */
export interface RaceComparison {
  /** Events of acknowledged batches that are not in the log at their seqs. */
  lost: number;
  /** Events in the log that no acknowledged or in-doubt batch wrote whole at that seq. */
  unacknowledged?: string;
  /** An event whose seq is not its position: a gap, a duplicate or two logs joined. */
  misplaced?: string;
}

/** The model of one session written by several store instances or processes. */
export class RaceSession {
  readonly id: string;
  /** Tried batches by `writer@from`. */
  readonly batches = new Map<string, RaceBatch>();

  constructor(
    readonly key: string,
    readonly cwd: string | undefined,
  ) {
    this.id = sessionId(key);
  }

  /**
   * A writer is about to append `events` at `from`. A batch tried again (after an error, or after
   * a CONFLICT that reloading did not move past) is in doubt again until it settles.
   */
  tried(writer: string, from: number, events: readonly string[]): RaceBatch {
    const key = `${writer}@${from}`;
    const known = this.batches.get(key);
    if (known !== undefined) {
      if (known.state === 'refused') known.state = 'doubt';
      return known;
    }
    const batch: RaceBatch = { writer, from, events: [...events], state: 'doubt' };
    this.batches.set(key, batch);
    return batch;
  }

  /**
   * The append of `batch` resolved. Returns a description when an acknowledged batch of another
   * writer holds one of its seqs: two appends both won a seq (contract §4 forbids it).
   */
  acked(batch: RaceBatch): string | undefined {
    batch.state = 'acked';
    for (const other of this.batches.values()) {
      if (other === batch || other.state !== 'acked') continue;
      if (overlaps(other, batch))
        return `${this.id}: ${batch.writer}'s batch at seq ${batch.from} and ${other.writer}'s at seq ${other.from} were both acknowledged over the same seq(s)`;
    }
    return undefined;
  }

  /** The append of `batch` was refused with CONFLICT: it wrote nothing. */
  refused(batch: RaceBatch): void {
    if (batch.state !== 'acked') batch.state = 'refused';
  }

  /**
   * The store showed `log` (canonical texts) after recovery, and it passed {@link compare}: from
   * now on the batches it holds are acknowledged and every other one tried so far is absent, so
   * that later readings are compared with this one exactly.
   */
  settle(log: readonly string[]): void {
    const kept = new Set<RaceBatch>();
    let at = 0;
    while (at < log.length) {
      const batch = [...this.batches.values()].find(
        (b) => b.from === at && b.state !== 'refused' && b.events.every((e, i) => log[at + i] === e),
      );
      if (batch === undefined) break;
      kept.add(batch);
      at += batch.events.length;
    }
    for (const batch of this.batches.values()) batch.state = kept.has(batch) ? 'acked' : 'refused';
  }

  /** The acknowledged batches in seq order: the log a settled session must show. */
  settledLog(): string[] {
    return [...this.batches.values()]
      .filter((b) => b.state === 'acked')
      .sort((a, b) => a.from - b.from)
      .flatMap((b) => b.events);
  }

  /** Batches still in doubt that start at `seq`. */
  inDoubtAt(seq: number): string[][] {
    return [...this.batches.values()]
      .filter((b) => b.state === 'doubt' && b.from === seq)
      .map((b) => [...b.events]);
  }

  /** Acknowledged events, all writers. */
  get ackedEvents(): number {
    let n = 0;
    for (const batch of this.batches.values()) if (batch.state === 'acked') n += batch.events.length;
    return n;
  }

  /** Whether the session surely exists (a batch was acknowledged). */
  get exists(): boolean {
    return this.ackedEvents > 0;
  }

  clone(): RaceSession {
    const copy = new RaceSession(this.key, this.cwd);
    for (const [key, batch] of this.batches) copy.batches.set(key, { ...batch });
    return copy;
  }

  /**
   * Compares a loaded log with the tried batches (pure): seq `i` at position `i`; from each
   * position, exactly one tried batch (acknowledged or in doubt, never refused) whole; every
   * acknowledged batch somewhere.
   */
  compare(log: readonly SessionEvent[]): RaceComparison {
    const result: RaceComparison = { lost: 0 };
    const misplaced = log.findIndex((event, i) => event.seq !== i);
    if (misplaced >= 0)
      result.misplaced = `${this.id}: the event at position ${misplaced} has seq ${log[misplaced]!.seq}`;
    const texts = log.map(canonicalEvent);
    const covered = new Set<RaceBatch>();
    let at = 0;
    while (at < texts.length && result.misplaced === undefined) {
      const whole = [...this.batches.values()].filter(
        (b) => b.from === at && b.events.every((e, i) => texts[at + i] === e),
      );
      const kept = whole.find((b) => b.state === 'acked') ?? whole.find((b) => b.state === 'doubt');
      if (kept === undefined) {
        const refused = whole.find((b) => b.state === 'refused');
        result.unacknowledged =
          refused !== undefined
            ? `${this.id}: ${refused.writer}'s batch at seq ${at} is in the log, though its append was refused with CONFLICT`
            : `${this.id}: ${texts.length - at} event(s) from seq ${at} on that no acknowledged or in-doubt batch wrote whole there`;
        break;
      }
      covered.add(kept);
      at += kept.events.length;
    }
    for (const batch of this.batches.values())
      if (batch.state === 'acked' && !covered.has(batch)) result.lost += batch.events.length;
    return result;
  }
}

function overlaps(a: RaceBatch, b: RaceBatch): boolean {
  const sameEvents = a.events.length === b.events.length && a.events.every((e, i) => e === b.events[i]);
  return !sameEvents && a.from < b.from + b.events.length && b.from < a.from + a.events.length;
}

/** The sessions of a concurrent run. */
export class RaceModel {
  readonly sessions = new Map<string, RaceSession>();

  session(key: string, cwd?: string): RaceSession {
    let session = this.sessions.get(key);
    if (session === undefined) {
      session = new RaceSession(key, cwd);
      this.sessions.set(key, session);
    }
    return session;
  }

  clone(): RaceModel {
    const copy = new RaceModel();
    for (const [key, session] of this.sessions) copy.sessions.set(key, session.clone());
    return copy;
  }
}

/**
 * The events writer `writer` appends at `from` of session `key` (pure, deterministic: a parent
 * process rebuilds a child's batches from `try` lines). `count` events, the last one a `turn/end`
 * boundary, so that relaxed durability syncs every batch and a crash must keep every acknowledged
 * one; the writer's name in every event makes two writers' batches at one seq differ.
 */
export function raceEvents(writer: string, key: string, from: number, count: number): SessionEvent[] {
  return Array.from({ length: count }, (_, i): SessionEvent => {
    const seq = from + i;
    const last = i === count - 1;
    const data: JsonValue = last
      ? { reason: 'done', writer, usage: { input: 10 + seq, output: 2 + seq } }
      : { writer, text: `${writer} writes seq ${seq} of ${key}` };
    return {
      seq,
      type: last ? 'turn/end' : 'assistant/message',
      time: new Date(Date.UTC(2026, 0, 2, 0, 0, seq)).toISOString(),
      data,
    };
  });
}

/** How many events writer `index` puts in its batch at `from`: 1 to 3, fixed per (writer, from). */
export function raceBatchSize(index: number, from: number): number {
  return 1 + ((from + index) % 3);
}
