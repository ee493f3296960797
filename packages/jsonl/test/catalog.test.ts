// The list catalog (`<root>/.catalog.jsonl`) is a cache: whatever happens to it (deleted, torn,
// replaced, behind another instance or a killed writer), list answers as if it read every sidecar.
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listAll, type SessionSummary } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { compactIfDue } from '../src/catalog-rebuild.js';
import type { StoreContext } from '../src/context.js';
import { bucketOf, type JsonlStore, openJsonlStore, sessionPaths } from '../src/index.js';
import { faultyFs } from './faulty-fs.js';
import { evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

const CHILD = fileURLToPath(new URL('./fixtures/child.mjs', import.meta.url));

/** Sessions s0..s{n-1}, each with one turn, s{n-1} the newest. */
async function seed(root: string, n: number, cwd?: string): Promise<void> {
  const store = await openJsonlStore({ root });
  for (let i = 0; i < n; i++) {
    await store.create({ id: `s${i}`, ...(cwd !== undefined && { cwd }) });
    await store.append(`s${i}`, evs(0, 2, true));
  }
  await store.close();
}

/** What a fresh store without any catalog lists: the truth the catalog must match. */
async function truth(root: string): Promise<SessionSummary[]> {
  const catalog = join(root, '.catalog.jsonl');
  const saved = existsSync(catalog) ? readFileSync(catalog) : undefined;
  if (saved !== undefined) unlinkSync(catalog);
  const store = await openJsonlStore({ root, lock: 'none' });
  const all: SessionSummary[] = [];
  for await (const entry of listAll(store, { pageSize: 7 })) if ('summary' in entry) all.push(entry.summary);
  await store.close();
  if (saved !== undefined) writeFileSync(catalog, saved);
  return all;
}

/** Every summary `store` lists, paging 7 at a time. */
async function listed(store: JsonlStore): Promise<SessionSummary[]> {
  const all: SessionSummary[] = [];
  for await (const entry of listAll(store, { pageSize: 7 })) if ('summary' in entry) all.push(entry.summary);
  return all;
}

function contextOf(store: JsonlStore): StoreContext {
  return Reflect.get(store, 'ctx') as StoreContext;
}

describe('the list catalog', () => {
  // Guards: list builds the catalog once and later lists page through it, matching a full scan.
  it('is built by the first list and gives the same pages as reading every sidecar', async () => {
    const root = tempDir();
    await seed(root, 20);
    const store = await openJsonlStore({ root });
    expect(await listed(store)).toEqual(await truth(root));
    expect(existsSync(join(root, '.catalog.jsonl'))).toBe(true);
    expect((await listed(store)).map((s) => s.id)).toEqual(
      Array.from({ length: 20 }, (_, i) => `s${19 - i}`),
    );
    await store.close();
  });

  // Guards: a deleted catalog is rebuilt, never taken for an empty store.
  it('is rebuilt when deleted', async () => {
    const root = tempDir();
    await seed(root, 9);
    const store = await openJsonlStore({ root });
    await listed(store);
    unlinkSync(join(root, '.catalog.jsonl'));
    await store.append('s3', evs(2, 1, true));
    const after = await listed(store);
    expect(after).toEqual(await truth(root));
    expect(after[0]!.id).toBe('s3');
    await store.close();
  });

  // Guards: a torn last record, garbage and a destroyed header lose nothing.
  it('survives torn records, garbage and a broken header', async () => {
    const root = tempDir();
    await seed(root, 9);
    const catalog = join(root, '.catalog.jsonl');
    const first = await openJsonlStore({ root });
    await listed(first);
    await first.close();
    const bytes = readFileSync(catalog);
    truncateSync(catalog, bytes.length - 17);
    appendFileSync(catalog, Buffer.from([0, 0, 0, 0x7b, 0x22]));
    const torn = await openJsonlStore({ root });
    expect(await listed(torn)).toEqual(await truth(root));
    await torn.close();
    writeFileSync(catalog, `garbage${bytes.subarray(20).toString()}`);
    const broken = await openJsonlStore({ root });
    expect(await listed(broken)).toEqual(await truth(root));
    await broken.close();
  });

  // Guards: another instance's append and update (lock still held, then released) move the session to the top.
  it('follows what another instance appended and updated', async () => {
    const root = tempDir();
    await seed(root, 9);
    const reader = await openJsonlStore({ root });
    await listed(reader);
    const writer = await openJsonlStore({ root });
    await writer.append('s2', evs(2, 2, true));
    await writer.update('s4', { title: 'renamed' });
    const whileOpen = await listed(reader);
    expect(whileOpen).toEqual(await truth(root));
    expect(whileOpen.slice(0, 2).map((s) => s.id)).toEqual(['s4', 's2']);
    await writer.close();
    expect(await listed(reader)).toEqual(await truth(root));
    const deleter = await openJsonlStore({ root });
    await deleter.delete('s4');
    await deleter.close();
    const afterDelete = await listed(reader);
    expect(afterDelete.map((s) => s.id)).not.toContain('s4');
    expect(afterDelete).toEqual(await truth(root));
    await reader.close();
  });

  // Guards: a writer killed after its append (stale lock, no catalog record) is still listed as it is.
  it('lists a session a killed process appended to without a catalog record', async () => {
    const root = tempDir();
    await seed(root, 6);
    const reader = await openJsonlStore({ root });
    await listed(reader);
    const child = spawn(process.execPath, [CHILD, JSON.stringify({ mode: 'hold', root, id: 's1', seq: 2 })], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await readyLine(child);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const after = await listed(reader);
    expect(after[0]).toMatchObject({ id: 's1', eventCount: 3 });
    expect(after).toEqual(await truth(root));
    await reader.close();
  });

  // Guards: a log and sidecar copied in by hand (no catalog record at all) appear on the next list.
  it('finds sessions that appeared without the catalog (a changed bucket is read again)', async () => {
    const root = tempDir();
    await seed(root, 4);
    const other = tempDir();
    const elsewhere = await openJsonlStore({ root: other });
    await elsewhere.create({ id: 'copied' });
    await elsewhere.append('copied', evs(0, 1, true));
    await elsewhere.close();
    const reader = await openJsonlStore({ root });
    await listed(reader);
    const from = sessionPaths(other, bucketOf(undefined), 'copied');
    writeFileSync(sessionPaths(root, bucketOf(undefined), 'copied').log, readFileSync(from.log));
    expect((await listed(reader)).map((s) => s.id)).toContain('copied');
    expect(await listed(reader)).toEqual(await truth(root));
    await reader.close();
  });

  // Guards: a session that cannot be described is a problem on every page, before and after the catalog exists.
  it('keeps reporting a session that cannot be described', async () => {
    const root = tempDir();
    await seed(root, 3);
    const bad = sessionPaths(root, bucketOf(undefined), 'bad');
    writeFileSync(bad.log, 'not a log\n');
    for (let round = 0; round < 2; round++) {
      const store = await openJsonlStore({ root });
      const page = await store.list({ limit: 2 });
      expect(page.problems.map((p) => p.id)).toEqual(['bad']);
      const next = await store.list({ limit: 2, cursor: page.nextCursor! });
      expect(next.problems.map((p) => p.id)).toEqual(['bad']);
      await store.close();
    }
  });

  // Guards: two processes appending and closing over and over leave a catalog that lists the truth.
  it('stays right while two processes write', async () => {
    const root = tempDir();
    await seed(root, 3);
    const reader = await openJsonlStore({ root });
    await listed(reader);
    await Promise.all(
      ['a', 'b'].map(
        (writer) =>
          new Promise<void>((resolve, reject) => {
            const child = spawn(
              process.execPath,
              [
                CHILD,
                JSON.stringify({ mode: 'writer', root, id: writer === 'a' ? 's0' : 's1', writer, count: 5 }),
              ],
              { stdio: 'ignore' },
            );
            child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`child ${code}`))));
          }),
      ),
    );
    const after = await listed(reader);
    expect(after).toEqual(await truth(root));
    expect(after.slice(0, 2).map((s) => s.eventCount)).toEqual([7, 7]);
    await reader.close();
  });

  // Guards: a fault reading the catalog makes list look at every session, never report them absent.
  it('answers from the files when the catalog cannot be read', async () => {
    const root = tempDir();
    await seed(root, 5);
    const warm = await openJsonlStore({ root });
    await listed(warm);
    await warm.close();
    const catalog = join(root, '.catalog.jsonl');
    const f = faultyFs((call, path) =>
      path === catalog && (call === 'open' || call === 'read') ? 'EIO' : undefined,
    );
    const store = await openJsonlStore({ root, fs: f.fs });
    expect(await listed(store)).toEqual(await truth(root));
    await store.close();
  });

  // Guards: compaction rewrites the file without losing a session, and a later list still matches.
  it('compacts without losing anything', async () => {
    const root = tempDir();
    await seed(root, 5);
    const store = await openJsonlStore({ root });
    await listed(store);
    const ctx = contextOf(store);
    ctx.catalog!.records = 1_000_000;
    const before = readFileSync(ctx.catalog!.path);
    await compactIfDue(ctx, ctx.catalog!);
    expect(readFileSync(ctx.catalog!.path).equals(before)).toBe(false);
    await store.append('s0', evs(2, 1, true));
    await store.close();
    const reopened = await openJsonlStore({ root });
    expect(await listed(reopened)).toEqual(await truth(root));
    await reopened.close();
  });
});

function readyLine(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve();
    });
    child.once('exit', () => reject(new Error('child exited early')));
  });
}
