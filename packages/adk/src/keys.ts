// Where an ADK session and the state it shares live in a tidemark store. ADK names a session by
// (appName, userId, sessionId), free strings each; a tidemark id is at most 128 characters of
// [A-Za-z0-9._-], so every log is named by a SHA-256 of its key, and the key itself is kept in the
// log (and, for sessions, in the summary's attrs and cwd) where a reader checks it.
import { createHash } from 'node:crypto';
import { errors, MAX_TEXT_LENGTH } from '@tidemark/core';

/** The tidemark log of one ADK session, of an app's shared state, or of a user's. */
export interface LogKey {
  /** The tidemark session id. */
  id: string;
  /** The working directory it is filed under: one per (app, user) for sessions. */
  cwd: string;
}

/** `cwd` of the logs of shared state, apart from every user's sessions. */
export const SHARED_CWD = 'adk:shared';

const digest = (parts: readonly string[]) => createHash('sha256').update(JSON.stringify(parts)).digest('hex');

/** The cwd that files the sessions of one user of one app together (what `listSessions` pages). */
export function userCwd(appName: string, userId: string): string {
  return `adk:${JSON.stringify([appName, userId])}`;
}

/** The log of the ADK session (appName, userId, sessionId). */
export function sessionLog(appName: string, userId: string, sessionId: string): LogKey {
  return { id: `adk-s-${digest([appName, userId, sessionId])}`, cwd: userCwd(appName, userId) };
}

/** The log of the `app:` state of `appName`. */
export function appStateLog(appName: string): LogKey {
  return { id: `adk-a-${digest([appName])}`, cwd: SHARED_CWD };
}

/** The log of the `user:` state of `userId` in `appName`. */
export function userStateLog(appName: string, userId: string): LogKey {
  return { id: `adk-u-${digest([appName, userId])}`, cwd: SHARED_CWD };
}

/** Checks one name of a session key: a non-empty string that fits in a cwd. */
export function assertName(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string' || value.length === 0)
    throw errors.invalid(`${what}: expected a non-empty string, got ${describe(value)}`);
  // appName and userId together form a cwd (MAX_TEXT_LENGTH characters at most).
  if (value.length > MAX_TEXT_LENGTH / 4)
    throw errors.invalid(`${what}: longer than ${MAX_TEXT_LENGTH / 4} characters (${value.length})`);
}

function describe(value: unknown): string {
  if (value === '') return 'an empty string';
  return value === null ? 'null' : typeof value;
}
