// Finding one session for a command, and saying precisely why it is not there: in the trash,
// removed, audited but missing, or never known.
import {
  listAll,
  type SessionEvent,
  type SessionStore,
  type SessionSummary,
  TidemarkError,
} from '@tidemark/core';
import type { AuditEntry, Lifecycle } from '@tidemark/lifecycle';
import type { Backend } from './backends.js';
import { auditLog, type Context, openLifecycleFor } from './context.js';
import { CliError, describeFailure } from './exit-codes.js';

/** The summary of one session, through list (which reads no event logs). */
export async function findSummary(store: SessionStore, id: string): Promise<SessionSummary | undefined> {
  for await (const entry of listAll(store)) {
    if ('summary' in entry) {
      if (entry.summary.id === id) return entry.summary;
    } else if (entry.problem.id === id) throw entry.problem.error;
  }
  return undefined;
}

/** Every event of a session, in order. */
export async function readEvents(store: SessionStore, id: string): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  for await (const event of store.read(id)) events.push(event);
  return events;
}

/**
 * NOT_FOUND, or AUDITED_MISSING when the audit log says the session should be there. When the
 * trash cannot be opened, the audit log alone still tells AUDITED_MISSING; otherwise the session
 * may be in that trash, and the failure to open it is the answer, never "does not exist".
 */
export async function absent(ctx: Context, main: Backend, id: string): Promise<never> {
  let lifecycle: Lifecycle;
  try {
    lifecycle = await openLifecycleFor(ctx, main);
  } catch (error) {
    throw await auditedMissingWithoutTrash(ctx, main, id, error);
  }
  const where = await lifecycle.locate(id);
  if (where.status === 'audited-missing') throw new CliError('AUDITED_MISSING', where.message);
  if (where.status === 'trashed') {
    throw new TidemarkError(
      'NOT_FOUND',
      `session ${id} is in the trash since ${where.entry.trashedAt} (tidemark trash restore ${id})`,
      {
        sessionId: id,
      },
    );
  }
  if (where.status === 'removed') {
    throw new TidemarkError(
      'NOT_FOUND',
      `session ${id} was ${where.lastEntry.action} at ${where.lastEntry.time}`,
      { sessionId: id },
    );
  }
  throw new TidemarkError('NOT_FOUND', `session ${id} does not exist in ${main.address.text}`, {
    sessionId: id,
  });
}

/**
 * What {@link absent} says when the trash cannot be opened (`trashError`): AUDITED_MISSING when
 * the audit log's last entry for this store is not a removal (a move to the trash is recorded
 * before the session leaves the store), else `trashError` itself.
 */
async function auditedMissingWithoutTrash(
  ctx: Context,
  main: Backend,
  id: string,
  trashError: unknown,
): Promise<unknown> {
  let history: AuditEntry[];
  try {
    history = await auditLog(ctx).history(id, main.address.text);
  } catch {
    return trashError;
  }
  const last = history[history.length - 1];
  if (last === undefined || last.action === 'deleted' || last.action === 'pruned' || last.action === 'purged')
    return trashError;
  return new CliError(
    'AUDITED_MISSING',
    `session ${id}: audited but missing from ${main.address.text} (last audit entry: ${last.action} at ${last.time}; ` +
      `the trash could not be checked: ${describeFailure(trashError).message})`,
  );
}
