/**
 * The rules a write checks against the chat it read, before it appends: the compare-and-set of
 * saves (by version, by prefix, or none with `replace`) and the stream id arguments.
 */
import { jsonEqual, TidemarkError } from '@tidemark/core';
import { describe } from './chat-ids.js';
import { type FoldedChat, versionOf } from './chat-log.js';
import type { StoredMessage } from './messages.js';

/** Checks a stream id argument of the active-stream methods. */
export function checkStreamId(value: unknown, name: string): asserts value is string | null {
  if (value === null || (typeof value === 'string' && value !== '' && value.length <= 1024)) return;
  throw new TidemarkError(
    'INVALID',
    `${name}: expected null or a stream id (1 to 1024 characters), got ${describe(value)}`,
  );
}

/** What a save expects of the chat it changes. */
export type Expectation = { version: string } | { prefix: true } | { replace: true };

export function checkExpectation(args: { version?: unknown; replace?: unknown }, name: string): Expectation {
  const { version, replace } = args;
  if (replace !== undefined && typeof replace !== 'boolean')
    throw new TidemarkError('INVALID', `${name}.replace: expected a boolean, got ${describe(replace)}`);
  if (replace === true) return { replace: true };
  if (version === undefined) return { prefix: true };
  if (typeof version !== 'string' || version === '')
    throw new TidemarkError(
      'INVALID',
      `${name}.version: expected a version string, got ${describe(version)}`,
    );
  return { version };
}

/**
 * Refuses a save built from a chat that changed since: the compare-and-set of saves.
 * @throws TidemarkError CONFLICT (retryable) naming what changed.
 */
export function checkUnchangedSince(
  chat: FoldedChat,
  stored: boolean,
  wanted: readonly StoredMessage[],
  expectation: Expectation,
): void {
  const refuse = (why: string) =>
    new TidemarkError(
      'CONFLICT',
      `chat ${JSON.stringify(chat.chatId)}: ${why}; it changed since the list was loaded. ` +
        'Load it again, apply the change to what it holds now, and save that ' +
        '(or pass replace: true to overwrite it)',
      { sessionId: chat.sessionId, retryable: true },
    );
  if ('replace' in expectation) return;
  if ('version' in expectation) {
    if (!stored) throw refuse(`the chat no longer exists (the save expected version ${expectation.version})`);
    if (versionOf(chat) !== expectation.version)
      throw refuse(`its messages are at version ${versionOf(chat)}, not ${expectation.version}`);
    return;
  }
  for (const [i, id] of chat.order.entries()) {
    const message = wanted[i];
    if (
      message === undefined ||
      message.id !== id ||
      !jsonEqual(message, chat.byId.get(id) as StoredMessage)
    ) {
      throw refuse(
        `it holds ${chat.order.length} messages and the saved list does not start with them ` +
          `(message ${i}, ${JSON.stringify(id)}, is ${message === undefined ? 'missing' : message.id !== id ? `${JSON.stringify(message.id)} in the list` : 'different in the list'}); ` +
          'a save that changes stored messages (a regenerate, an edit) passes the version it loaded',
      );
    }
  }
}
