// The log of one Claude session (main transcript and subagent transcripts together), and the fold
// that reads it back. Every store operation is one batch: a header naming the key, the entries,
// and a closing boundary event that carries the session's listing state (summary, mtime,
// subkeys), so the state after any batch is in the log itself and a crash leaves whole batches.
import { randomBytes } from 'node:crypto';
import type { SessionKey, SessionSummaryEntry } from '@anthropic-ai/claude-agent-sdk';
import { type JsonValue, type SessionEvent, TidemarkError } from '@tidemark/core';

/** Event types this adapter writes. */
export const EVENT = {
  /** Starts an append: `{ projectKey, sessionId, subpath }` (`subpath` null for the main transcript). */
  append: 'claude/append',
  /** One transcript entry, verbatim. */
  entry: 'claude/entry',
  /** Deletes one subagent transcript: `{ projectKey, sessionId, subpath }`. */
  drop: 'claude/drop',
  /** Closes every batch with the listing state after it: {@link ListingState} and {@link BatchLink}. */
  end: 'turn/end',
} as const;

/** The main transcript's name among a session's transcripts. */
export const MAIN = '';

/** What listing a session needs, carried by every closing event and mirrored in the summary attrs. */
export interface ListingState {
  /** Persist time of the last append, epoch ms, strictly increasing per session. */
  mtime: number;
  /** The folded summary of the main transcript; null while it has no entries. */
  summary: SessionSummaryEntry | null;
  /** Subpaths that hold a transcript. */
  subkeys: string[];
}

/**
 * What the closing event of a batch carries besides the listing state: its own random `nonce`, and
 * `prev`, the nonce of the closing event just before the batch (null for the first batch). A batch
 * whose `prev` is not the nonce before it was planned on a log that another host deleted and
 * rewrote to the same length while the batch was planned: it landed on the wrong log, and the fold
 * skips it (its writer saw that and did not acknowledge it). Logs written before nonces have
 * neither field; their batches are all applied.
 */
export interface BatchLink {
  nonce: string;
  prev: string | null;
}

/** One transcript: its entries and the uuids among them. */
export interface Transcript {
  entries: JsonValue[];
  uuids: Set<string>;
}

/** A session folded from its log. */
export interface FoldedSession {
  /** Transcripts by subpath, {@link MAIN} for the main one. */
  transcripts: Map<string, Transcript>;
  listing: ListingState;
  nextSeq: number;
  /** The nonce of the log's last closing event (null: no log, or one written before nonces). */
  lastNonce: string | null;
  /**
   * The log's last event, whole, as the store holds it (read from it, or appended by this
   * object): what the next batch is appended after. Undefined when there is no log.
   */
  last?: SessionEvent;
}

/** The state of a session that has no log. */
export function emptySession(): FoldedSession {
  return {
    transcripts: new Map(),
    listing: { mtime: 0, summary: null, subkeys: [] },
    nextSeq: 0,
    lastNonce: null,
  };
}

/** The transcript name of a key. */
export const transcriptName = (key: SessionKey): string => key.subpath ?? MAIN;

/** A fresh random nonce for a batch's closing event. */
export const newNonce = (): string => randomBytes(12).toString('base64url');

/** The nonce of a closing event, null when it has none (written before nonces). */
export function nonceOf(event: SessionEvent): string | null {
  const nonce = (event.data as { nonce?: unknown } | null)?.nonce;
  return typeof nonce === 'string' ? nonce : null;
}

function corrupt(id: string, seq: number, what: string): TidemarkError {
  return new TidemarkError('CORRUPT', `session ${id}, event ${seq}: ${what}`, {
    sessionId: id,
    location: { seq },
  });
}

/** Reads a header's key and checks it is this session's (the id is a hash of the key). */
function headerSubpath(event: SessionEvent, owner: Omit<SessionKey, 'subpath'>, id: string): string {
  const header = event.data as { projectKey?: unknown; sessionId?: unknown; subpath?: unknown } | null;
  if (header?.projectKey !== owner.projectKey || header.sessionId !== owner.sessionId) {
    throw corrupt(
      id,
      event.seq,
      'the log belongs to another project or session (hash collision or foreign data)',
    );
  }
  if (header.subpath !== null && typeof header.subpath !== 'string')
    throw corrupt(id, event.seq, 'bad subpath');
  return header.subpath ?? MAIN;
}

/** The listing state of a closing event, without its link fields. */
function listingOf(event: SessionEvent): ListingState {
  const { mtime, summary, subkeys } = event.data as unknown as ListingState;
  return { mtime, summary, subkeys };
}

/** True when a batch closed by `end` was planned on the log it landed on (see {@link BatchLink}). */
function linksTo(end: SessionEvent, lastNonce: string | null): boolean {
  const data = end.data as { prev?: unknown } | null;
  return data === null || !Object.hasOwn(data, 'prev') || data.prev === lastNonce;
}

/** Applies one whole batch (its closing event last) to a session, unless it is a skipped one. */
function applyBatch(
  session: FoldedSession,
  batch: readonly SessionEvent[],
  owner: Omit<SessionKey, 'subpath'>,
  id: string,
): void {
  const end = batch[batch.length - 1]!;
  const applies = end.type !== EVENT.end || linksTo(end, session.lastNonce);
  if (applies) {
    let current: Transcript | undefined;
    for (const event of batch) {
      switch (event.type) {
        case EVENT.append: {
          const name = headerSubpath(event, owner, id);
          current = session.transcripts.get(name) ?? { entries: [], uuids: new Set() };
          session.transcripts.set(name, current);
          break;
        }
        case EVENT.entry: {
          if (current === undefined) throw corrupt(id, event.seq, 'entry outside an append');
          const uuid = (event.data as { uuid?: unknown }).uuid;
          if (typeof uuid === 'string') current.uuids.add(uuid);
          current.entries.push(event.data);
          break;
        }
        case EVENT.drop:
          session.transcripts.delete(headerSubpath(event, owner, id));
          break;
        case EVENT.end:
          session.listing = listingOf(event);
          break;
        default:
          throw corrupt(
            id,
            event.seq,
            `event type ${JSON.stringify(event.type)} is not a Claude transcript event`,
          );
      }
    }
  }
  if (end.type === EVENT.end) session.lastNonce = nonceOf(end);
  session.last = end;
  session.nextSeq = end.seq + 1;
}

/**
 * Folds events onto a session, in place: the events of whole batches that follow its `nextSeq`
 * (a whole log onto {@link emptySession}, or what another host appended onto a cached session).
 * @throws TidemarkError CORRUPT for events this adapter does not write, or written for another key.
 */
export function foldInto(
  session: FoldedSession,
  events: readonly SessionEvent[],
  owner: Omit<SessionKey, 'subpath'>,
  id: string,
): FoldedSession {
  let start = 0;
  for (let i = 0; i < events.length; i++) {
    if (events[i]!.type === EVENT.end || i === events.length - 1) {
      applyBatch(session, events.slice(start, i + 1), owner, id);
      start = i + 1;
    }
  }
  return session;
}

/**
 * Folds a session's events.
 * @throws TidemarkError CORRUPT for events this adapter does not write, or written for another key.
 */
export function foldSession(
  events: readonly SessionEvent[],
  owner: Omit<SessionKey, 'subpath'>,
  id: string,
): FoldedSession {
  return foldInto(emptySession(), events, owner, id);
}
