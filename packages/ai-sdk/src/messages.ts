import {
  assertJsonValue,
  DEFAULT_MAX_DEPTH,
  type JsonObject,
  jsonEqual,
  TidemarkError,
} from '@tidemark/core';
import { describe } from './chat-ids.js';

/** A `UIMessage` as stored: plain JSON, with the fields every message has checked. */
export type StoredMessage = JsonObject & { id: string; role: string; parts: JsonObject['parts'] };

const ROLES = new Set(['system', 'user', 'assistant']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A copy of `value` without object properties whose value is `undefined`. The AI SDK leaves such
 * properties on messages (`metadata: undefined`, `providerMetadata: undefined`) and JSON drops them,
 * so dropping them changes nothing a client sees. An `undefined` array element would become `null`
 * in JSON, a real change, so it is left in place for {@link assertJsonValue} to reject with its path.
 * Past the depth limit the value is kept as it is, and the JSON check reports the depth (or cycle).
 */
function withoutUndefined(value: unknown, depth: number): unknown {
  if (depth > DEFAULT_MAX_DEPTH) return value;
  if (Array.isArray(value)) return value.map((item) => withoutUndefined(item, depth + 1));
  if (!isPlainObject(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = value[key];
    if (item === undefined) continue;
    // defineProperty keeps `__proto__` an ordinary key, as JSON.parse would.
    Object.defineProperty(copy, key, {
      value: withoutUndefined(item, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/** Checks one message and returns its stored form. */
function toStoredMessage(message: unknown, path: string): StoredMessage {
  if (!isPlainObject(message))
    throw new TidemarkError('INVALID', `${path}: expected a UIMessage object, got ${describe(message)}`);
  const copy = withoutUndefined(message, 0);
  assertJsonValue(copy, path);
  const stored = copy as JsonObject;
  if (typeof stored.id !== 'string' || stored.id === '') {
    throw new TidemarkError('INVALID', `${path}.id: expected a non-empty string, got ${describe(stored.id)}`);
  }
  if (typeof stored.role !== 'string' || !ROLES.has(stored.role)) {
    throw new TidemarkError(
      'INVALID',
      `${path}.role: expected 'system', 'user' or 'assistant', got ${describe(stored.role)}`,
    );
  }
  if (!Array.isArray(stored.parts)) {
    throw new TidemarkError('INVALID', `${path}.parts: expected an array, got ${describe(stored.parts)}`);
  }
  return stored as StoredMessage;
}

/**
 * Checks a list of messages as a save receives it: an array of UIMessages, each with a unique
 * non-empty id, a role and parts, and JSON all the way down.
 * @throws TidemarkError INVALID naming the first offending message or value.
 */
export function toStoredMessages(messages: unknown, path = 'messages'): StoredMessage[] {
  if (!Array.isArray(messages))
    throw new TidemarkError('INVALID', `${path}: expected an array of UIMessages, got ${describe(messages)}`);
  const seen = new Map<string, number>();
  return messages.map((message, index) => {
    const stored = toStoredMessage(message, `${path}[${index}]`);
    const first = seen.get(stored.id);
    if (first !== undefined) {
      throw new TidemarkError(
        'INVALID',
        `${path}[${index}].id: ${JSON.stringify(stored.id)} is also the id of ${path}[${first}]`,
      );
    }
    seen.set(stored.id, index);
    return stored;
  });
}

/** The messages of a chat, in order, keyed by id. */
export interface MessageList {
  order: string[];
  byId: Map<string, StoredMessage>;
}

/** What one save changes: the messages it adds and replaces, and the new order when not implied. */
export interface MessageChanges {
  /** Messages whose id the chat does not hold, in the order given. */
  append: StoredMessage[];
  /** Messages whose id the chat holds with other content. */
  replace: StoredMessage[];
  /**
   * The full id order after the save, present only when it is not the old order followed by the
   * appended ids (a message was removed or moved, as a regenerate does).
   */
  order?: string[];
}

/** The changes that turn `current` into `wanted`; undefined when they are the same. */
export function diffMessages(
  current: MessageList,
  wanted: readonly StoredMessage[],
): MessageChanges | undefined {
  const append: StoredMessage[] = [];
  const replace: StoredMessage[] = [];
  for (const message of wanted) {
    const held = current.byId.get(message.id);
    if (held === undefined) append.push(message);
    else if (!jsonEqual(held, message)) replace.push(message);
  }
  const implied = [...current.order, ...append.map((message) => message.id)];
  const wantedOrder = wanted.map((message) => message.id);
  const sameOrder = implied.length === wantedOrder.length && implied.every((id, i) => id === wantedOrder[i]);
  if (append.length === 0 && replace.length === 0 && sameOrder) return undefined;
  return sameOrder ? { append, replace } : { append, replace, order: wantedOrder };
}
