/**
 * The log format of a chat: the events each operation appends, and the fold that turns a log
 * back into the chat. Every operation is one batch ending with a `turn/end` boundary, so a
 * complete chat is never an "interrupted tail" that `load({ tail: 'cut' })` or `tidemark repair`
 * would set aside.
 *
 * A cold read must not fold the whole history, so the log keeps its own index: every event of
 * this adapter names in `base` the seq of the latest snapshot (the `ai-sdk/chat` event at seq 0
 * is the snapshot of the empty chat; an `ai-sdk/snapshot` event holds the whole chat after its
 * batch). A reader takes the pointer from the last batch and folds from that snapshot only. The
 * pointer is written in the same batch as the change it describes, so a crash leaves it as
 * consistent as the log itself. Saves of code that wrote no pointers are still read, by a fold
 * of the whole log, and the next write adds a snapshot.
 */
import { type JsonObject, type JsonValue, type SessionEvent, TidemarkError } from '@tidemark/core';
import { describe } from './chat-ids.js';
import type { MessageChanges, MessageList, StoredMessage } from './messages.js';

/** Event types written by this adapter. */
export const CHAT_EVENT = {
  /** First event of every chat: `{ chatId, format }`. */
  created: 'ai-sdk/chat',
  /** One save: `{ append, replace, order?, end? }`. */
  save: 'ai-sdk/save',
  /** A compare-and-set of the active stream id: `{ expected, next }`. */
  activeStream: 'ai-sdk/active-stream',
  /** The whole chat after its batch, so that a reader can start there. */
  snapshot: 'ai-sdk/snapshot',
} as const;

/** The boundary that closes every batch. */
export const BOUNDARY_TYPE = 'turn/end';

/** The chat log format this code writes and reads. */
export const CHAT_FORMAT = 1;

/** How a stream ended, as the end handler recorded it. */
export interface ChatEnd {
  /** True when the stream was aborted (`isAborted` of the AI SDK's finish event). */
  aborted: boolean;
  /** The model's finish reason, when the stream got that far. */
  finishReason?: string;
  /** Id of the message sent as the response. */
  responseMessageId?: string;
  /**
   * The AI SDK's outcome of the stream (`completed`, `failed`, `aborted`, `unknown`), where the
   * version reports one. A client that went away without `consumeStream` leaves `isAborted` false
   * and no finish reason.
   */
  outcome?: string;
}

/** A chat folded from its log. */
export interface FoldedChat extends MessageList {
  sessionId: string;
  chatId: string;
  activeStreamId: string | null;
  /** The last recorded end of a stream, with the seq and time of its event. */
  lastEnd?: ChatEnd & { seq: number; time: string };
  /** The seq the next batch starts with. */
  nextSeq: number;
  /**
   * Tells this chat from another one written under the same id after a delete: a random id in
   * its first event (the time of that event for chats written before there was one).
   */
  incarnation: string;
  /** Seq of the last event that changed the messages (0: none since the chat was created). */
  messagesSeq: number;
  /** Seq of the snapshot the fold started from or passed last (0: the first event). */
  base: number;
  /** Messages written and events appended since `base`: when to write the next snapshot. */
  sinceBase: { messages: number; events: number };
  /** False when the log had no pointer (written before pointers existed): the next write adds one. */
  indexed: boolean;
}

/** The state of a chat that has no log yet. */
export function emptyChat(sessionId: string, chatId: string, incarnation: string): FoldedChat {
  return {
    sessionId,
    chatId,
    order: [],
    byId: new Map(),
    activeStreamId: null,
    nextSeq: 0,
    incarnation,
    messagesSeq: 0,
    base: 0,
    sinceBase: { messages: 0, events: 0 },
    indexed: true,
  };
}

/**
 * The version of a chat's messages, as `loadChatState` and `saveChat` return it: it changes with
 * every write that changes a message, and differs between a chat and one written again under the
 * same id after a delete.
 */
export function versionOf(chat: FoldedChat): string {
  return `${chat.messagesSeq}.${chat.incarnation}`;
}

/** Snapshot when the messages written since the last one are half as many as the chat holds. */
const SNAPSHOT_MIN_MESSAGES = 32;
/** ... or when this many events follow it (active-stream changes write no message). */
const SNAPSHOT_MAX_EVENTS = 512;

/**
 * Whether the batch that leaves `chat` (the state after it) should end with a snapshot. The rule
 * keeps a cold read proportional to the chat, not to its history: what follows a snapshot is at
 * most about half as many messages as the chat holds, and the snapshots of a chat that grows
 * (each at least 1.5 times the one before) hold about three times its final size in all.
 */
export function wantsSnapshot(chat: FoldedChat): boolean {
  const { messages, events } = chat.sinceBase;
  return messages >= Math.max(SNAPSHOT_MIN_MESSAGES, chat.order.length / 2) || events >= SNAPSHOT_MAX_EVENTS;
}

/** Data of a save event. */
function saveData(changes: MessageChanges, end: ChatEnd | undefined): JsonObject {
  const data: JsonObject = { append: changes.append, replace: changes.replace };
  if (changes.order !== undefined) data.order = changes.order;
  if (end !== undefined) {
    const endData: JsonObject = { aborted: end.aborted };
    if (end.finishReason !== undefined) endData.finishReason = end.finishReason;
    if (end.responseMessageId !== undefined) endData.responseMessageId = end.responseMessageId;
    if (end.outcome !== undefined) endData.outcome = end.outcome;
    data.end = endData;
  }
  return data;
}

/** One operation, as the events of its batch before seq and time are filled in. */
export interface Operation {
  created?: boolean;
  save?: { changes: MessageChanges; end?: ChatEnd };
  activeStream?: { expected: string | null; next: string | null };
}

/** Data of a snapshot: the whole chat, as the fold left it. */
function snapshotData(chat: FoldedChat): JsonObject {
  const data: JsonObject = {
    chatId: chat.chatId,
    format: CHAT_FORMAT,
    incarnation: chat.incarnation,
    messagesSeq: chat.messagesSeq,
    messages: chat.order.map((id) => chat.byId.get(id) as StoredMessage),
    activeStreamId: chat.activeStreamId,
  };
  if (chat.lastEnd !== undefined) data.lastEnd = { ...chat.lastEnd };
  return data;
}

/**
 * The batch that applies `operation` to `chat` at its next seq, ending with a snapshot when
 * {@link wantsSnapshot} says so or the chat was read without a pointer.
 */
export function batchOf(chat: FoldedChat, operation: Operation, time: string): SessionEvent[] {
  const bodies: Array<{ type: string; data: JsonObject }> = [];
  if (operation.created === true) {
    bodies.push({
      type: CHAT_EVENT.created,
      data: { chatId: chat.chatId, format: CHAT_FORMAT, incarnation: chat.incarnation },
    });
  }
  if (operation.save !== undefined)
    bodies.push({ type: CHAT_EVENT.save, data: saveData(operation.save.changes, operation.save.end) });
  if (operation.activeStream !== undefined)
    bodies.push({ type: CHAT_EVENT.activeStream, data: { ...operation.activeStream } });
  const events: SessionEvent[] = bodies.map((body, i) => ({
    seq: chat.nextSeq + i,
    type: body.type,
    time,
    data: body.type === CHAT_EVENT.created ? body.data : { ...body.data, base: chat.base },
  }));
  if (operation.created !== true) {
    // The state after this batch: the snapshot, if one is due, describes exactly that.
    const after = foldChat(chat.sessionId, chat.chatId, events, chat);
    if (!chat.indexed || wantsSnapshot(after)) {
      events.push({ seq: after.nextSeq, type: CHAT_EVENT.snapshot, time, data: snapshotData(after) });
    }
  }
  events.push({ seq: chat.nextSeq + events.length, type: BOUNDARY_TYPE, time, data: null });
  return events;
}

function corrupt(sessionId: string, event: SessionEvent, what: string): TidemarkError {
  return new TidemarkError(
    'CORRUPT',
    `chat session ${sessionId}: event ${event.seq} (${event.type}): ${what}`,
    {
      sessionId,
      location: { seq: event.seq },
    },
  );
}

function isObject(value: JsonValue): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function messagesIn(
  value: JsonValue | undefined,
  fail: (what: string) => TidemarkError,
  field: string,
): StoredMessage[] {
  if (!Array.isArray(value)) throw fail(`${field} is ${describe(value)}, not an array`);
  return value.map((message, i) => {
    if (!isObject(message) || typeof message.id !== 'string' || message.id === '')
      throw fail(`${field}[${i}] is not a message with an id`);
    return message as StoredMessage;
  });
}

/** Applies a save to `chat` and returns how many messages it wrote. */
function applySave(chat: FoldedChat, data: JsonObject, fail: (what: string) => TidemarkError): number {
  const append = messagesIn(data.append, fail, 'append');
  const replace = messagesIn(data.replace, fail, 'replace');
  for (const message of replace) {
    if (!chat.byId.has(message.id))
      throw fail(`replace names message ${JSON.stringify(message.id)}, which the chat does not hold`);
    chat.byId.set(message.id, message);
  }
  for (const message of append) {
    // A message already held is replaced in place, never listed twice.
    if (!chat.byId.has(message.id)) chat.order.push(message.id);
    chat.byId.set(message.id, message);
  }
  if (data.order !== undefined) {
    const order = data.order;
    if (
      !Array.isArray(order) ||
      !order.every((id): id is string => typeof id === 'string' && chat.byId.has(id))
    ) {
      throw fail('order is not a list of ids the chat holds');
    }
    if (new Set(order).size !== order.length) throw fail('order lists an id twice');
    const kept = new Set(order);
    for (const id of chat.order) if (!kept.has(id)) chat.byId.delete(id);
    chat.order = [...order];
  }
  return append.length + replace.length;
}

function endOf(data: JsonObject, fail: (what: string) => TidemarkError): ChatEnd | undefined {
  if (data.end === undefined) return undefined;
  const end = data.end;
  if (!isObject(end) || typeof end.aborted !== 'boolean') throw fail('end is not { aborted: boolean }');
  const out: ChatEnd = { aborted: end.aborted };
  if (typeof end.finishReason === 'string') out.finishReason = end.finishReason;
  if (typeof end.responseMessageId === 'string') out.responseMessageId = end.responseMessageId;
  if (typeof end.outcome === 'string') out.outcome = end.outcome;
  return out;
}

/** Checks the chat id and format that a chat's first event and every snapshot carry. */
function checkChatHeader(sessionId: string, chatId: string, event: SessionEvent, data: JsonObject): void {
  const { format, chatId: stored } = data;
  if (typeof format !== 'number' || format > CHAT_FORMAT) {
    throw new TidemarkError(
      'UNSUPPORTED_FORMAT',
      `chat session ${sessionId}: chat format ${String(format)} is newer than this code knows (${CHAT_FORMAT})`,
      { sessionId },
    );
  }
  if (stored !== chatId)
    throw corrupt(sessionId, event, `holds chat ${JSON.stringify(stored)}, not ${JSON.stringify(chatId)}`);
}

/** True for an event a fold can start from: the chat's first event or a snapshot. */
export function isFoldStart(event: SessionEvent | undefined): boolean {
  return (
    event !== undefined &&
    (event.type === CHAT_EVENT.created || event.type === CHAT_EVENT.snapshot) &&
    isObject(event.data)
  );
}

/**
 * The seq of the snapshot to fold from, as the last event of this adapter among `tail` names it;
 * undefined when there is none, or it was written before pointers existed.
 */
export function pointerIn(tail: readonly SessionEvent[]): number | undefined {
  for (let i = tail.length - 1; i >= 0; i--) {
    const event = tail[i]!;
    if (isFoldStart(event)) return event.seq;
    if (event.type !== CHAT_EVENT.save && event.type !== CHAT_EVENT.activeStream) continue;
    const base = isObject(event.data) ? event.data.base : undefined;
    return typeof base === 'number' && Number.isSafeInteger(base) && base >= 0 && base < event.seq
      ? base
      : undefined;
  }
  return undefined;
}

function copyChat(chat: FoldedChat): FoldedChat {
  const copy: FoldedChat = {
    ...chat,
    order: [...chat.order],
    byId: new Map(chat.byId),
    sinceBase: { ...chat.sinceBase },
  };
  if (chat.lastEnd !== undefined) copy.lastEnd = { ...chat.lastEnd };
  return copy;
}

/** The chat a snapshot holds. */
function fromSnapshot(
  sessionId: string,
  chatId: string,
  event: SessionEvent,
  data: JsonObject,
  fail: (what: string) => TidemarkError,
): FoldedChat {
  const { incarnation, messagesSeq, activeStreamId } = data;
  if (typeof incarnation !== 'string' || incarnation === '') throw fail('incarnation is not a string');
  if (typeof messagesSeq !== 'number' || !Number.isSafeInteger(messagesSeq) || messagesSeq < 0)
    throw fail('messagesSeq is not a seq');
  if (activeStreamId !== null && typeof activeStreamId !== 'string')
    throw fail('activeStreamId is neither a string nor null');
  const chat = emptyChat(sessionId, chatId, incarnation);
  for (const message of messagesIn(data.messages, fail, 'messages')) {
    if (chat.byId.has(message.id)) throw fail(`messages lists ${JSON.stringify(message.id)} twice`);
    chat.order.push(message.id);
    chat.byId.set(message.id, message);
  }
  chat.activeStreamId = activeStreamId;
  chat.messagesSeq = messagesSeq;
  chat.base = event.seq;
  if (data.lastEnd !== undefined) {
    const end = endOf({ end: data.lastEnd }, fail);
    const { seq, time } = data.lastEnd as JsonObject;
    if (end === undefined || typeof seq !== 'number' || typeof time !== 'string')
      throw fail('lastEnd is not an end with its seq and time');
    chat.lastEnd = { ...end, seq, time };
  }
  return chat;
}

/**
 * The chat that `events` describe. Without `start`, `events` begin with the chat's first event
 * (a whole log) or with a snapshot; with it, they are folded onto a copy of `start`. Events of
 * other types are skipped, so an application may log its own events in the same session.
 * @throws TidemarkError INVALID when the session is not a chat, UNSUPPORTED_FORMAT for a newer
 *   format, CORRUPT (with the seq) for an event of this adapter that does not have its shape.
 */
export function foldChat(
  sessionId: string,
  chatId: string,
  events: readonly SessionEvent[],
  start?: FoldedChat,
): FoldedChat {
  if (start === undefined && !isFoldStart(events[0])) {
    const first = events[0];
    throw new TidemarkError(
      'INVALID',
      `session ${sessionId} is not an AI SDK chat: its first event is ${first === undefined ? 'missing' : `'${first.type}'`}, not '${CHAT_EVENT.created}'`,
      { sessionId },
    );
  }
  let chat = start === undefined ? emptyChat(sessionId, chatId, '') : copyChat(start);
  for (const event of events) {
    const fail = (what: string) => corrupt(sessionId, event, what);
    const data = event.data;
    if (event.type === CHAT_EVENT.created) {
      if (!isObject(data)) throw fail('data is not an object');
      checkChatHeader(sessionId, chatId, event, data);
      const incarnation = typeof data.incarnation === 'string' ? data.incarnation : `t${event.time}`;
      chat = emptyChat(sessionId, chatId, incarnation);
      chat.base = event.seq;
    } else if (event.type === CHAT_EVENT.snapshot) {
      if (!isObject(data)) throw fail('data is not an object');
      checkChatHeader(sessionId, chatId, event, data);
      chat = fromSnapshot(sessionId, chatId, event, data, fail);
    } else if (event.type === CHAT_EVENT.save) {
      if (!isObject(data)) throw fail('data is not an object');
      const written = applySave(chat, data, fail);
      if (written > 0 || data.order !== undefined) chat.messagesSeq = event.seq;
      chat.sinceBase.messages += written;
      chat.sinceBase.events += 1;
      chat.indexed = typeof data.base === 'number';
      const end = endOf(data, fail);
      if (end !== undefined) chat.lastEnd = { ...end, seq: event.seq, time: event.time };
    } else if (event.type === CHAT_EVENT.activeStream) {
      const next = isObject(data) ? data.next : undefined;
      if (next !== null && typeof next !== 'string') throw fail('next is neither a string nor null');
      chat.activeStreamId = next;
      chat.sinceBase.events += 1;
      chat.indexed = isObject(data) && typeof data.base === 'number';
    }
  }
  if (events.length > 0) chat.nextSeq = events[events.length - 1]!.seq + 1;
  return chat;
}
