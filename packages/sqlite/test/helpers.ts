// Shared test plumbing: a temp directory per test, events that are easy to recognise, and the
// invariant checks every fault test ends with.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  isTidemarkError,
  type SessionEvent,
  type SessionStore,
  type TidemarkErrorCode,
  type VerifyReport,
} from '@tidemark/core';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { openSqliteStore, type SqliteStore, type SqliteStoreOptions } from '../src/index.js';

const dirs: string[] = [];

/** A fresh directory, removed by {@link removeTempDirs}. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-sqlite-'));
  dirs.push(dir);
  return dir;
}

/** Removes every directory made by {@link tempDir}. */
export function removeTempDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Opens a store on a fresh database file. */
export async function freshStore(
  options: Partial<SqliteStoreOptions> = {},
): Promise<{ store: SqliteStore; path: string }> {
  const path = join(tempDir(), 'store.db');
  return { store: await openSqliteStore({ ...options, path }), path };
}

/** Asserts that `verify()` finds no damage in the file at `path` (interrupted turns are not damage). */
export async function expectNoDamage(path: string): Promise<void> {
  const { problems } = await verifyFile(path);
  expect(problems.filter((p) => p.kind !== 'interrupted')).toEqual([]);
}

/** `verify()` of every session of the database at `path`, through a store opened for it. */
export async function verifyFile(path: string): Promise<VerifyReport> {
  const store = await openSqliteStore({ path });
  try {
    return await store.verify();
  } finally {
    await store.close();
  }
}

/** `count` events starting at `from`; every `boundaryEvery`-th one is a `turn/end`. */
export function events(from: number, count: number, boundaryEvery = 0, tag = 'e'): SessionEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = from + i;
    const boundary = boundaryEvery > 0 && (seq + 1) % boundaryEvery === 0;
    return {
      seq,
      type: boundary ? 'turn/end' : 'tool/call',
      time: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, seq)).toISOString(),
      data: { tag, seq, text: `event ${seq}` },
    };
  });
}

/** Asserts a rejection with a TidemarkError of `code` and returns it. */
export async function rejectsWith(promise: Promise<unknown>, code: TidemarkErrorCode) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isTidemarkError(error), `expected a TidemarkError ${code}, got ${String(error)}`).toBe(true);
  expect((error as { code: string }).code).toBe(code);
  return error as import('@tidemark/core').TidemarkError;
}

/**
 * The invariants of contract §7.4 after a fault is lifted: the session is present (no false absence),
 * holds every acknowledged event unchanged and nothing past a partial batch, and takes the next
 * append.
 */
export async function assertInvariants(
  store: SessionStore,
  id: string,
  acknowledged: readonly SessionEvent[],
) {
  expect(await store.has(id)).toBe(true);
  const page = await store.list({ limit: 10_000 });
  expect(page.sessions.map((s) => s.id)).toContain(id);
  const loaded = await store.load(id);
  expect(loaded.events.slice(0, acknowledged.length)).toEqual(acknowledged);
  const next = loaded.events.length;
  const result = await store.append(id, events(next, 1, 1, 'after-fault'));
  expect(result.nextSeq).toBe(next + 1);
  return loaded;
}

/**
 * Changes the first byte of `text` where it is stored in the leaf page of b-tree `btree` (a table
 * or an index) of a closed database file, to `replacement`: one damaged key in one b-tree, the
 * page structure otherwise sound. Throws when the text is not in that page.
 */
export function damageKey(path: string, btree: string, text: string, replacement = 'c'): void {
  const db = new Database(path, { readonly: true });
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const page = db
    .prepare(`SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'`)
    .pluck()
    .get(btree) as number | undefined;
  db.close();
  if (page === undefined) throw new Error(`no leaf page of ${btree}`);
  const bytes = readFileSync(path);
  const start = (page - 1) * pageSize;
  const at = bytes.indexOf(text, start);
  if (at < 0 || at >= start + pageSize) throw new Error(`${text} is not in page ${page} of ${btree}`);
  bytes[at] = replacement.charCodeAt(0);
  writeFileSync(path, bytes);
}
