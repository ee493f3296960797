// A whole session as rekey moves it: header fields, summary fields and every event, in stored
// (sealed) form or opened (plaintext) form; loading one from a store, writing one into a store in
// a single atomic materialization, and the digests that say whether two copies hold the same thing.
import { createHash } from 'node:crypto';
import {
  type CreateInit,
  isTidemarkError,
  type JsonValue,
  type ParentRef,
  type SessionEvent,
  type SessionStore,
  type SummaryPatch,
  TidemarkError,
} from '@tidemark/core';
import { openEvents, sealEvents, sealedRuns } from '../batch.js';
import { openSummary, sealAttrs, sealedKeyId, sealText } from '../format.js';
import type { Keyring } from '../keyring.js';

/** One session, all of it: what a copy must carry to be the same session. */
export interface SessionImage {
  id: string;
  createdAt: string;
  cwd?: string;
  parent?: ParentRef;
  tags?: string[];
  title?: string;
  firstPrompt?: string;
  attrs?: { [key: string]: JsonValue };
  events: SessionEvent[];
}

/** A session as a store holds it, with the version (`updatedAt`) it was read at. */
export interface StoredImage extends SessionImage {
  updatedAt: string;
}

/**
 * Session `id` of `store` as stored, or undefined when the store says it does not exist
 * (NOT_FOUND, nothing else: any other failure rejects).
 */
export async function loadStored(store: SessionStore, id: string): Promise<StoredImage | undefined> {
  let loaded: Awaited<ReturnType<SessionStore['load']>>;
  try {
    loaded = await store.load(id);
  } catch (error) {
    if (isTidemarkError(error) && error.code === 'NOT_FOUND') return undefined;
    throw error;
  }
  const { meta, summary, events } = loaded;
  return {
    id,
    createdAt: meta.createdAt,
    updatedAt: summary.updatedAt,
    ...(meta.cwd !== undefined && { cwd: meta.cwd }),
    ...(meta.parent !== undefined && { parent: meta.parent }),
    ...(summary.tags !== undefined && { tags: summary.tags }),
    ...(summary.title !== undefined && { title: summary.title }),
    ...(summary.firstPrompt !== undefined && { firstPrompt: summary.firstPrompt }),
    ...(summary.attrs !== undefined && { attrs: summary.attrs }),
    events,
  };
}

/** The key ids a stored session's sealed values name, and whether any value is not sealed. */
export interface KeyUse {
  keys: Set<string>;
  plaintext: boolean;
}

/** Which keys the sealed values of a stored session are sealed under (no key needed). */
export function keyUse(image: SessionImage): KeyUse {
  const use: KeyUse = { keys: new Set(), plaintext: false };
  const note = (value: JsonValue | string) => {
    const keyId = sealedKeyId(value);
    if (keyId === undefined) use.plaintext = true;
    else use.keys.add(keyId);
  };
  if (image.title !== undefined) note(image.title);
  if (image.firstPrompt !== undefined) note(image.firstPrompt);
  if (image.attrs !== undefined) note(image.attrs);
  for (const event of image.events) note(event.data);
  return use;
}

/** True when every sealed value of the session is sealed under `keyId` and none is plaintext. */
export function wholly(image: SessionImage, keyId: string): boolean {
  const use = keyUse(image);
  return !use.plaintext && [...use.keys].every((k) => k === keyId);
}

/**
 * The plaintext of a stored session: every event and summary field opened with the keyring.
 * @throws TidemarkError CORRUPT naming the session and the seq or field (tampered, a key the
 *   keyring lacks, plaintext in a sealed session, malformed).
 */
export function openImage(keyring: Keyring, stored: SessionImage): SessionImage {
  const summary = openSummary(keyring, {
    id: stored.id,
    createdAt: stored.createdAt,
    updatedAt: stored.createdAt,
    eventCount: stored.events.length,
    committedSeq: -1,
    interrupted: false,
    ...(stored.title !== undefined && { title: stored.title }),
    ...(stored.firstPrompt !== undefined && { firstPrompt: stored.firstPrompt }),
    ...(stored.attrs !== undefined && { attrs: stored.attrs }),
  });
  return {
    ...header(stored),
    ...(summary.title !== undefined && { title: summary.title }),
    ...(summary.firstPrompt !== undefined && { firstPrompt: summary.firstPrompt }),
    ...(summary.attrs !== undefined && { attrs: summary.attrs }),
    events: openEvents(keyring, stored.id, stored.events),
  };
}

/**
 * The plaintext session sealed under the keyring's current key, for its own id; with `runs` (the
 * stored image's {@link sealedRuns}) each batch sealed as one is sealed as one again.
 */
export function sealImage(keyring: Keyring, plain: SessionImage, runs?: readonly number[]): SessionImage {
  const id = plain.id;
  return {
    ...header(plain),
    ...(plain.title !== undefined && { title: sealText(keyring, id, 'title', plain.title, 'rekey') }),
    ...(plain.firstPrompt !== undefined && {
      firstPrompt: sealText(keyring, id, 'firstPrompt', plain.firstPrompt, 'rekey'),
    }),
    ...(plain.attrs !== undefined && { attrs: sealAttrs(keyring, id, plain.attrs) }),
    events: sealEvents(keyring, id, plain.events, runs),
  };
}

/** The fields that never change and are never sealed: id, creation time, cwd, parent, tags. */
function header(image: SessionImage): SessionImage {
  return {
    id: image.id,
    createdAt: image.createdAt,
    ...(image.cwd !== undefined && { cwd: image.cwd }),
    ...(image.parent !== undefined && { parent: image.parent }),
    ...(image.tags !== undefined && { tags: image.tags }),
    events: [],
  };
}

/** JSON with object keys sorted at every level (the same value always gives the same text). */
function canonical(value: JsonValue | undefined): string {
  if (value === undefined) return 'undefined';
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
}

/** sha256 (hex) of one event: seq, type, time and data. */
export function eventDigest(event: SessionEvent): string {
  const { seq, type, time, data } = event;
  return createHash('sha256').update(canonical({ seq, type, time, data })).digest('hex');
}

/** sha256 (hex) of a whole session: its header and summary fields and the digest of every event. */
export function imageDigest(image: SessionImage): string {
  const hash = createHash('sha256');
  hash.update(
    canonical({
      id: image.id,
      createdAt: image.createdAt,
      cwd: image.cwd ?? null,
      parent: image.parent === undefined ? null : { id: image.parent.id, seq: image.parent.seq },
      // No tags and empty tags (no attrs and empty attrs) are the same to a reader, and backends
      // differ in which one they return.
      tags: image.tags === undefined || image.tags.length === 0 ? null : image.tags,
      title: image.title ?? null,
      firstPrompt: image.firstPrompt ?? null,
      attrs: image.attrs === undefined || Object.keys(image.attrs).length === 0 ? null : image.attrs,
    }),
  );
  for (const event of image.events) hash.update(`\n${eventDigest(event)}`);
  return hash.digest('hex');
}

/** True when the events of `prefix` are, one for one, the first events of `whole`. */
export function eventsArePrefix(prefix: SessionImage, whole: SessionImage): boolean {
  if (prefix.events.length > whole.events.length) return false;
  return prefix.events.every((event, i) => eventDigest(event) === eventDigest(whole.events[i]!));
}

/**
 * Writes a stored-form session into `store` as one atomic materialization: `create` with the
 * header fields and the title (nothing is written yet, create is lazy), `update` of the pending
 * session with firstPrompt and attrs (kept for the first batch), then ONE append of every event,
 * with which header, summary and events land together or not at all.
 * @throws TidemarkError INVALID for a session without events (a store cannot hold one);
 *   ALREADY_EXISTS when the store already holds the id; any error of the store.
 */
export async function materialize(store: SessionStore, image: SessionImage): Promise<void> {
  if (image.events.length === 0) {
    throw new TidemarkError(
      'INVALID',
      `session ${image.id} has no events: a store holds a session only from its first event, so it cannot be written again`,
      { sessionId: image.id },
    );
  }
  const init: CreateInit = { id: image.id, createdAt: image.createdAt };
  if (image.cwd !== undefined) init.cwd = image.cwd;
  if (image.parent !== undefined) init.parent = image.parent;
  if (image.tags !== undefined) init.tags = image.tags;
  if (image.title !== undefined) init.title = image.title;
  try {
    await store.create(init);
  } catch (error) {
    // Pending in this very instance from an earlier attempt that failed before its append; a
    // materialized session is a real conflict, which has() tells apart.
    if (!(isTidemarkError(error) && error.code === 'ALREADY_EXISTS') || (await store.has(image.id)))
      throw error;
  }
  // Title and tags again: a reservation left pending by an earlier attempt keeps its own init.
  const patch: SummaryPatch = {};
  if (image.title !== undefined) patch.title = image.title;
  if (image.tags !== undefined) patch.tags = image.tags;
  if (image.firstPrompt !== undefined) patch.firstPrompt = image.firstPrompt;
  if (image.attrs !== undefined) patch.attrs = image.attrs;
  if (Object.keys(patch).length > 0) await store.update(image.id, patch);
  await store.append(image.id, image.events);
}
