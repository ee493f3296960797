/**
 * The log format of a chat: the events each operation appends, and the fold that turns a log
 * back into the chat. Every operation is one batch ending with a `turn/end` boundary, so a
 * complete chat is never an "interrupted tail" that `load({ tail: 'cut' })` or `tidemark repair`
 * would set aside.
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
  chatId: string;
  activeStreamId: string | null;
  /** The last recorded end of a stream, with the seq and time of its event. */
  lastEnd?: ChatEnd & { seq: number; time: string };
  /** The seq the next batch starts with. */
  nextSeq: number;
}

/** The state of a chat that has no log yet. */
export function emptyChat(chatId: string): FoldedChat {
  return { chatId, order: [], byId: new Map(), activeStreamId: null, nextSeq: 0 };
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

/** The batch that applies `operation` to `chat` at its next seq. */
export function batchOf(chat: FoldedChat, operation: Operation, time: string): SessionEvent[] {
  const bodies: Array<{ type: string; data: JsonValue }> = [];
  if (operation.created === true)
    bodies.push({ type: CHAT_EVENT.created, data: { chatId: chat.chatId, format: CHAT_FORMAT } });
  if (operation.save !== undefined)
    bodies.push({ type: CHAT_EVENT.save, data: saveData(operation.save.changes, operation.save.end) });
  if (operation.activeStream !== undefined)
    bodies.push({ type: CHAT_EVENT.activeStream, data: { ...operation.activeStream } });
  bodies.push({ type: BOUNDARY_TYPE, data: null });
  return bodies.map((body, i) => ({ seq: chat.nextSeq + i, type: body.type, time, data: body.data }));
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

function applySave(chat: FoldedChat, data: JsonObject, fail: (what: string) => TidemarkError): void {
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

function checkHeader(sessionId: string, chatId: string, first: SessionEvent | undefined): void {
  if (first === undefined || first.type !== CHAT_EVENT.created || !isObject(first.data)) {
    throw new TidemarkError(
      'INVALID',
      `session ${sessionId} is not an AI SDK chat: its first event is ${first === undefined ? 'missing' : `'${first.type}'`}, not '${CHAT_EVENT.created}'`,
      { sessionId },
    );
  }
  const { format, chatId: stored } = first.data;
  if (typeof format !== 'number' || format > CHAT_FORMAT) {
    throw new TidemarkError(
      'UNSUPPORTED_FORMAT',
      `chat session ${sessionId}: chat format ${String(format)} is newer than this code knows (${CHAT_FORMAT})`,
      {
        sessionId,
      },
    );
  }
  if (stored !== chatId)
    throw corrupt(sessionId, first, `holds chat ${JSON.stringify(stored)}, not ${JSON.stringify(chatId)}`);
}

/**
 * The chat that `events` (a whole log, from seq 0) describe. Events of other types are skipped, so
 * an application may log its own events in the same session.
 * @throws TidemarkError INVALID when the session is not a chat, UNSUPPORTED_FORMAT for a newer
 *   format, CORRUPT (with the seq) for an event of this adapter that does not have its shape.
 */
export function foldChat(sessionId: string, chatId: string, events: readonly SessionEvent[]): FoldedChat {
  checkHeader(sessionId, chatId, events[0]);
  const chat = emptyChat(chatId);
  for (const event of events) {
    const fail = (what: string) => corrupt(sessionId, event, what);
    if (event.type === CHAT_EVENT.save) {
      if (!isObject(event.data)) throw fail('data is not an object');
      applySave(chat, event.data, fail);
      const end = endOf(event.data, fail);
      if (end !== undefined) chat.lastEnd = { ...end, seq: event.seq, time: event.time };
    } else if (event.type === CHAT_EVENT.activeStream) {
      const next = isObject(event.data) ? event.data.next : undefined;
      if (next !== null && typeof next !== 'string') throw fail('next is neither a string nor null');
      chat.activeStreamId = next;
    }
  }
  chat.nextSeq = events.length === 0 ? 0 : events[events.length - 1]!.seq + 1;
  return chat;
}
