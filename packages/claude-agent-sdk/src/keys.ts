import { createHash } from 'node:crypto';
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { assertJsonValue, loneSurrogateIndex, TidemarkError } from '@tidemark/core';

// Project keys run to 200 characters and more, so a key cannot be spelled out in a 128-character
// tidemark id. The id is a hash of (projectKey, sessionId); every header in the log names the
// key in full and the fold checks it, so two keys can never silently share a log. The project key
// is also the session's `cwd`, which `list` filters on.

/** The tidemark id of a Claude session (main and subagent transcripts share it). */
export function tidemarkIdOf(key: Omit<SessionKey, 'subpath'>): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([key.projectKey, key.sessionId]))
    .digest('hex');
  return `claude-${digest.slice(0, 48)}`;
}

function assertKeyText(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string' || value === '')
    throw new TidemarkError('INVALID', `${what}: must be a non-empty string`);
  if (value.length > 4096) throw new TidemarkError('INVALID', `${what}: longer than 4096 characters`);
  if (loneSurrogateIndex(value) !== -1)
    throw new TidemarkError('INVALID', `${what}: has a lone UTF-16 surrogate`);
}

/**
 * Checks a session key: project key and session id non-empty text, subpath absent or non-empty.
 * @throws TidemarkError INVALID naming the bad field.
 */
export function checkKey(key: unknown, what: string, subpath = true): asserts key is SessionKey {
  if (key === null || typeof key !== 'object')
    throw new TidemarkError('INVALID', `${what}: key must be an object`);
  const k = key as Record<string, unknown>;
  assertKeyText(k.projectKey, `${what}: projectKey`);
  assertKeyText(k.sessionId, `${what}: sessionId`);
  if (subpath && k.subpath !== undefined) assertKeyText(k.subpath, `${what}: subpath`);
}

/** Checks a project key argument. */
export function checkProjectKey(projectKey: unknown, what: string): asserts projectKey is string {
  assertKeyText(projectKey, `${what}: projectKey`);
}

/**
 * Checks a batch of entries: an array of JSON objects with a string `type`.
 * @throws TidemarkError INVALID naming the first bad entry.
 */
export function checkEntries(entries: unknown): asserts entries is SessionStoreEntry[] {
  if (!Array.isArray(entries)) throw new TidemarkError('INVALID', 'append: entries must be an array');
  entries.forEach((entry: unknown, i) => {
    const at = `append: entries[${i}]`;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new TidemarkError('INVALID', `${at}: must be an object`);
    }
    if (typeof (entry as { type?: unknown }).type !== 'string') {
      throw new TidemarkError('INVALID', `${at}.type: must be a string`);
    }
    const uuid = (entry as { uuid?: unknown }).uuid;
    if (uuid !== undefined && typeof uuid !== 'string')
      throw new TidemarkError('INVALID', `${at}.uuid: must be a string`);
    assertJsonValue(entry, at);
  });
}
