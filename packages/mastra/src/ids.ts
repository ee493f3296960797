// Where each Mastra record lives. A thread, a resource and a workflow run are each one tidemark
// session. Mastra ids are any string; session ids may hold only `[A-Za-z0-9._-]`, so an id made of
// `[A-Za-z0-9_-]` (UUIDs, `user-42`) keeps its form after a kind prefix and a dot (`mthread.<id>`),
// and any other id is written as the SHA-256 of its UTF-8 form after the prefix and `h.`
// (`mthreadh.<hex>`), so the two forms never meet.
import { createHash } from 'node:crypto';
import { TidemarkError } from '@tidemark/core';

/** The kinds of session this adapter writes, as their id prefixes. */
export const KIND = { thread: 'mthread', resource: 'mresource', run: 'mrun' } as const;
export type Kind = (typeof KIND)[keyof typeof KIND];

const PLAIN = /^[A-Za-z0-9_-]{1,100}$/;

function digest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * A non-empty string id of a Mastra record, or INVALID naming `what`.
 * @throws TidemarkError INVALID when `value` is not a non-empty string.
 */
export function checkId(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.trim().length === 0) {
    throw new TidemarkError('INVALID', `${what}: expected a non-empty string, got ${JSON.stringify(value)}`);
  }
  return value;
}

function sessionIdOf(kind: Kind, id: string): string {
  return PLAIN.test(id) ? `${kind}.${id}` : `${kind}h.${digest(id)}`;
}

/** The session that holds the thread `threadId` and its messages. */
export const threadSessionId = (threadId: string): string => sessionIdOf(KIND.thread, threadId);

/** The session that holds the resource `resourceId` (its working memory and metadata). */
export const resourceSessionId = (resourceId: string): string => sessionIdOf(KIND.resource, resourceId);

/** The session that holds the snapshots of one workflow run. */
export function runSessionId(workflowName: string, runId: string): string {
  const key = `${workflowName}\u0000${runId}`;
  return PLAIN.test(workflowName) && PLAIN.test(runId) && workflowName.length + runId.length <= 100
    ? `${KIND.run}.${workflowName}.${runId}`
    : `${KIND.run}h.${digest(key)}`;
}

/**
 * The `cwd` under which a thread's session is listed: threads are listed by resource, so the
 * resource id is the session's working directory (a prefix keeps it apart from real paths).
 */
export const resourceCwd = (resourceId: string): string => `mastra-resource:${resourceId}`;
