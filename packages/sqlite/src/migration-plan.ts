// The pure decisions of schema.ts: what a database's version header means and how a refusal reads.
// Kept apart from the I/O so mutation testing (`pnpm mutate`) covers exactly these rules.
import { errors, TidemarkError } from '@tidemark/core';

/** Schema version this code writes and understands (`PRAGMA user_version`). */
export const SQLITE_SCHEMA_VERSION = 1;

/** `PRAGMA application_id` of tidemark databases ("TDMK"), so a foreign database is never migrated. */
export const SQLITE_APPLICATION_ID = 0x54444d4b;

/** What {@link planMigration} decided for a database's version header. */
export type MigrationPlan =
  | { kind: 'current' }
  | { kind: 'migrate'; from: number; to: number }
  | { kind: 'newer'; found: number }
  | { kind: 'foreign'; applicationId: number; userVersion: number; schemaObjects?: number };

/**
 * Decides what to do with a database from its `user_version` and `application_id` (pure).
 * A fresh file has both at 0. A database stamped with another application's id is refused rather
 * than written into, and so is one with a `user_version` but no application id: every version
 * tidemark ever wrote stamps both in the same transaction, so that is another program's database.
 */
export function planMigration(
  userVersion: number,
  applicationId: number,
  known = SQLITE_SCHEMA_VERSION,
  schemaObjects = 0,
): MigrationPlan {
  if (applicationId !== SQLITE_APPLICATION_ID && (applicationId !== 0 || userVersion !== 0))
    return { kind: 'foreign', applicationId, userVersion };
  // Version 0 without an id is a fresh file only when it is empty: tables, indexes or views of
  // its own make it another program's database (most never set user_version).
  if (applicationId === 0 && schemaObjects > 0)
    return { kind: 'foreign', applicationId, userVersion, schemaObjects };
  if (userVersion > known) return { kind: 'newer', found: userVersion };
  if (userVersion === known && applicationId === SQLITE_APPLICATION_ID) return { kind: 'current' };
  return { kind: 'migrate', from: userVersion, to: known };
}

/** Throws UNSUPPORTED_FORMAT describing why `plan` (a `newer` or `foreign` one) is refused. */
export function refuse(plan: MigrationPlan, file: string): never {
  if (plan.kind === 'newer') throw errors.unsupportedFormat(plan.found, SQLITE_SCHEMA_VERSION);
  if (plan.kind === 'foreign') {
    const whose =
      plan.applicationId !== 0
        ? `belongs to another application (application_id ${plan.applicationId})`
        : plan.schemaObjects !== undefined
          ? `is not a tidemark database (it holds ${plan.schemaObjects} tables, indexes or views of its own and no tidemark header)`
          : `is not a tidemark database (user_version ${plan.userVersion} without tidemark's application_id)`;
    throw new TidemarkError('UNSUPPORTED_FORMAT', `${file} ${whose}; tidemark will not write into it`);
  }
  throw new Error(`unreachable: ${plan.kind}`);
}
