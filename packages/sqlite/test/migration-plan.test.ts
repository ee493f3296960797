import { describe, expect, it } from 'vitest';
import { planMigration, SQLITE_APPLICATION_ID, SQLITE_SCHEMA_VERSION } from '../src/migration-plan.js';

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
