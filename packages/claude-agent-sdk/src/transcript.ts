// The log of one Claude session (main transcript and subagent transcripts together), and the fold
// that reads it back. Every store operation is one batch: a header naming the key, the entries,
// and a closing boundary event that carries the session's listing state (summary, mtime,
// subkeys), so the state after any batch is in the log itself and a crash leaves whole batches.
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
  /** Closes every batch with the listing state after it: {@link ListingState}. */
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
}

/** The state of a session that has no log. */
export function emptySession(): FoldedSession {
  return { transcripts: new Map(), listing: { mtime: 0, summary: null, subkeys: [] }, nextSeq: 0 };
}

/** The transcript name of a key. */
export const transcriptName = (key: SessionKey): string => key.subpath ?? MAIN;

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

/**
 * Folds a session's events.
 * @throws TidemarkError CORRUPT for events this adapter does not write, or written for another key.
 */
export function foldSession(
  events: readonly SessionEvent[],
  owner: Omit<SessionKey, 'subpath'>,
  id: string,
): FoldedSession {
  const session = emptySession();
  let current: Transcript | undefined;
  for (const event of events) {
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
        current = undefined;
        session.listing = event.data as unknown as ListingState;
        break;
      default:
        throw corrupt(
          id,
          event.seq,
          `event type ${JSON.stringify(event.type)} is not a Claude transcript event`,
        );
    }
  }
  session.nextSeq = events.length === 0 ? 0 : events[events.length - 1]!.seq + 1;
  return session;
}
