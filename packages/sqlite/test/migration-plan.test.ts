import { describe, expect, it } from 'vitest';
import {
  planMigration,
  refuse,
  SQLITE_APPLICATION_ID,
  SQLITE_SCHEMA_VERSION,
} from '../src/migration-plan.js';

describe('planMigration', () => {
  it('decides from user_version and application_id', () => {
    expect(planMigration(0, 0)).toEqual({ kind: 'migrate', from: 0, to: SQLITE_SCHEMA_VERSION });
    expect(planMigration(SQLITE_SCHEMA_VERSION, SQLITE_APPLICATION_ID)).toEqual({ kind: 'current' });
    expect(planMigration(SQLITE_SCHEMA_VERSION + 1, SQLITE_APPLICATION_ID)).toEqual({
      kind: 'newer',
      found: SQLITE_SCHEMA_VERSION + 1,
    });
    expect(planMigration(1, 42)).toEqual({ kind: 'foreign', applicationId: 42, userVersion: 1 });
    expect(planMigration(1, SQLITE_APPLICATION_ID, 3)).toEqual({ kind: 'migrate', from: 1, to: 3 });
  });

  // Every tidemark version stamps user_version and application_id in one transaction, so a
  // user_version without the id is another program's database, not an old tidemark one.
  it('treats a user_version without an application_id as foreign, and only 0/0 as fresh', () => {
    expect(planMigration(1, 0)).toEqual({ kind: 'foreign', applicationId: 0, userVersion: 1 });
    expect(planMigration(1, 0, 3)).toEqual({ kind: 'foreign', applicationId: 0, userVersion: 1 });
    expect(planMigration(SQLITE_SCHEMA_VERSION + 1, 0)).toEqual({
      kind: 'foreign',
      applicationId: 0,
      userVersion: SQLITE_SCHEMA_VERSION + 1,
    });
    expect(planMigration(0, 0, 3)).toEqual({ kind: 'migrate', from: 0, to: 3 });
  });

  // Most programs never set user_version: version 0 without an id is fresh only when empty.
  it('treats version 0 without an id but with schema objects as foreign', () => {
    expect(planMigration(0, 0, SQLITE_SCHEMA_VERSION, 0)).toEqual({
      kind: 'migrate',
      from: 0,
      to: SQLITE_SCHEMA_VERSION,
    });
    expect(planMigration(0, 0, SQLITE_SCHEMA_VERSION, 2)).toEqual({
      kind: 'foreign',
      applicationId: 0,
      userVersion: 0,
      schemaObjects: 2,
    });
    // Ours, with our tables: current, whatever the count.
    expect(planMigration(SQLITE_SCHEMA_VERSION, SQLITE_APPLICATION_ID, SQLITE_SCHEMA_VERSION, 7)).toEqual({
      kind: 'current',
    });
  });
});

describe('planMigration of another application', () => {
  // An application id not ours is foreign even at user_version 0: never stamp another program's file.
  it('treats any other application id as foreign whatever the version', () => {
    expect(planMigration(0, 42)).toEqual({ kind: 'foreign', applicationId: 42, userVersion: 0 });
    expect(planMigration(SQLITE_SCHEMA_VERSION, 42)).toEqual({
      kind: 'foreign',
      applicationId: 42,
      userVersion: SQLITE_SCHEMA_VERSION,
    });
  });
});

describe('refuse', () => {
  const file = '/data/s.db';
  const refusal = (plan: Parameters<typeof refuse>[0]): Error => {
    try {
      refuse(plan, file);
    } catch (error) {
      return error as Error;
    }
    throw new Error('refuse returned');
  };

  // A newer schema is named with both versions so the user knows to upgrade tidemark.
  it('refuses a newer schema as UNSUPPORTED_FORMAT naming both versions', () => {
    const error = refusal({ kind: 'newer', found: SQLITE_SCHEMA_VERSION + 4 });
    expect(error).toMatchObject({
      code: 'UNSUPPORTED_FORMAT',
      message: `format version ${SQLITE_SCHEMA_VERSION + 4} is newer than this code knows (${SQLITE_SCHEMA_VERSION}); upgrade tidemark`,
    });
  });

  // Each kind of foreign database gets the reason that tells the user what they pointed at.
  it('says why a foreign database is not tidemark', () => {
    const other = refusal({ kind: 'foreign', applicationId: 42, userVersion: 3 });
    expect(other).toMatchObject({ code: 'UNSUPPORTED_FORMAT' });
    expect(other.message).toBe(
      `${file} belongs to another application (application_id 42); tidemark will not write into it`,
    );
    const tables = refusal({ kind: 'foreign', applicationId: 0, userVersion: 0, schemaObjects: 3 });
    expect(tables.message).toBe(
      `${file} is not a tidemark database (it holds 3 tables, indexes or views of its own and no tidemark header); tidemark will not write into it`,
    );
    const versioned = refusal({ kind: 'foreign', applicationId: 0, userVersion: 5 });
    expect(versioned.message).toBe(
      `${file} is not a tidemark database (user_version 5 without tidemark's application_id); tidemark will not write into it`,
    );
  });

  // Only newer and foreign plans are refusals; being asked to refuse another is a bug, loudly.
  it('throws a plain error for a plan that is not a refusal', () => {
    for (const plan of [{ kind: 'current' }, { kind: 'migrate', from: 0, to: 1 }] as const) {
      const error = refusal(plan);
      expect(error).not.toHaveProperty('code');
      expect(error.message).toBe(`unreachable: ${plan.kind}`);
    }
  });
});
