import {
  appendFileSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { isTidemarkError, type SessionEvent, type SessionStore } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  bucketOf,
  openJsonlStore,
  QUARANTINE_DIR,
  repairSession,
  sessionPaths,
  verifySession,
} from '../src/index.js';
import { faultyFs } from './faulty-fs.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

async function seeded(root: string, id = 's', batches: SessionEvent[][] = [evs(0, 2, true), evs(2, 2)]) {
  const store = await openJsonlStore({ root });
  await store.create({ id });
  for (const batch of batches) await store.append(id, batch);
  await store.close();
  return sessionPaths(root, bucketOf(undefined), id);
}

function quarantined(root: string): { name: string; bytes: Buffer }[] {
  const dir = join(root, QUARANTINE_DIR);
  return readdirSync(dir).map((name) => ({ name, bytes: readFileSync(join(dir, name)) }));
}

function linesOf(path: string): unknown[] {
  return readFileSync(path, 'utf8')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line));
}

async function collect(store: SessionStore, id: string): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const event of store.read(id)) out.push(event);
  return out;
}

describe('torn tails', () => {
  it('a torn line followed by a new append never makes a merged line; the torn bytes go to quarantine', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const torn = '{"seq":4,"type":"user/message","ti';
    appendFileSync(paths.log, torn);
    const store = await openJsonlStore({ root });
    expect(await store.append('s', evs(4, 1, true))).toEqual({ nextSeq: 5 });
    expect(linesOf(paths.log)).toHaveLength(6); // every line parses: nothing was glued on
    expect((await store.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(quarantined(root).map((q) => q.bytes.toString('utf8'))).toEqual([torn]);
    await store.close();
  });

  it('load repairs a torn tail and says so; a second load has nothing to repair', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const before = statSync(paths.log).size;
    appendFileSync(paths.log, Buffer.alloc(100));
    const store = await openJsonlStore({ root });
    const loaded = await store.load('s');
    expect(loaded.events).toHaveLength(4);
    expect(loaded.recovered).toMatchObject({ tornBytes: 100 });
    expect(loaded.recovered?.quarantinedAt).toContain(QUARANTINE_DIR);
    expect(statSync(paths.log).size).toBe(before);
    expect((await store.load('s')).recovered).toBeUndefined();
    await store.close();
  });

  it('read and verify never modify a log with a torn tail', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    appendFileSync(paths.log, 'garbage');
    const bytes = readFileSync(paths.log);
    const store = await openJsonlStore({ root });
    expect((await collect(store, 's')).map((e) => e.seq)).toEqual([0, 1, 2, 3]);
    await store.close();
    const report = await verifySession({ root }, 's');
    expect(report.sessions[0]).toMatchObject({ status: 'torn', eventCount: 4, committedSeq: 1 });
    const torn = bytes.length - 7;
    expect(report.problems).toMatchObject([
      {
        kind: 'torn',
        offset: torn,
        bytes: 7,
        file: paths.log,
        message: expect.stringContaining('(partial-line)'),
      },
      { kind: 'interrupted', seq: 2 },
    ]);
    expect(readFileSync(paths.log).equals(bytes)).toBe(true);
  });
});

describe("tail: 'cut'", () => {
  it('cuts whole batches after the last boundary into quarantine and continues from committedSeq + 1', async () => {
    const root = tempDir();
    const paths = await seeded(root, 's', [evs(0, 2, true), evs(2, 2), evs(4, 1)]);
    const store = await openJsonlStore({ root });
    const loaded = await store.load('s', { tail: 'cut' });
    expect(loaded.events.map((e) => e.seq)).toEqual([0, 1]);
    expect(loaded).toMatchObject({ committedSeq: 1, interrupted: false, recovered: { cutEvents: 3 } });
    expect(quarantined(root)[0]!.bytes.toString('utf8').trimEnd().split('\n')).toHaveLength(3);
    expect(await store.append('s', [ev(2, 'turn/end')])).toEqual({ nextSeq: 3 });
    await store.close();
    const again = await openJsonlStore({ root });
    expect((await again.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2]);
    expect((await again.list()).sessions[0]).toMatchObject({
      eventCount: 3,
      committedSeq: 2,
      interrupted: false,
    });
    await again.close();
    expect(linesOf(paths.log)).toHaveLength(4);
  });

  it('re-frames a batch whose boundary sits inside it (atomic rewrite), keeping the batch before it', async () => {
    const root = tempDir();
    const paths = await seeded(root, 's', [[ev(0), ev(1, 'turn/end'), ev(2), ev(3)]]);
    const store = await openJsonlStore({ root });
    const loaded = await store.load('s', { tail: 'cut' });
    expect(loaded.events.map((e) => e.seq)).toEqual([0, 1]);
    expect(loaded.recovered?.cutEvents).toBe(2);
    expect(await store.append('s', [ev(2, 'note')])).toEqual({ nextSeq: 3 });
    await store.close();
    const lines = linesOf(paths.log) as { seq?: number; end?: number }[];
    expect(lines.slice(1).map((l) => [l.seq, l.end])).toEqual([
      [0, 1],
      [1, 1],
      [2, 2],
    ]);
    expect(statSync(paths.log).mode & 0o777).toBe(0o600);
  });
});

describe('corruption', () => {
  it('damage to the second-last batch that reads like a torn last write is CORRUPT, because the sidecar counted those bytes as committed', async () => {
    const root = tempDir();
    // Two acknowledged one-line batches; close() records the whole log as committed in the sidecar.
    const paths = await seeded(root, 's', [evs(0, 1, true), evs(1, 1, true)]);
    const text = readFileSync(paths.log, 'utf8');
    const offset = text.indexOf('{"seq":0');
    const damaged = Buffer.from(text, 'utf8');
    damaged[offset + 3] = 0x58; // bit rot inside the first batch; the second stays intact
    writeFileSync(paths.log, damaged);
    // From the bytes alone this is a batch [0, 1] whose first line was torn: scanLog calls it a tail.
    const store = await openJsonlStore({ root });
    const error = await store.load('s').catch((e: unknown) => e);
    expect(isTidemarkError(error, 'CORRUPT')).toBe(true);
    expect((error as { location: unknown }).location).toMatchObject({ file: paths.log, offset, seq: 0 });
    await expect(collect(store, 's')).rejects.toMatchObject({ code: 'CORRUPT' });
    await expect(store.append('s', evs(2, 1))).rejects.toMatchObject({ code: 'CORRUPT' });
    await store.close();
    expect((await verifySession({ root }, 's')).problems).toMatchObject([
      { kind: 'corrupt', sessionId: 's', offset, file: paths.log },
    ]);
    // Nothing was repaired away: the log is as it was, and nothing went to quarantine.
    expect(readFileSync(paths.log).equals(damaged)).toBe(true);
    expect(() => readdirSync(join(root, QUARANTINE_DIR))).toThrow();
    // The explicit repair reads it the same way, and sets the damaged end aside.
    const report = await repairSession({ root }, 's', { dropCorrupt: true });
    expect(report).toMatchObject({ corruptBytes: damaged.length - offset, eventCount: 0 });
    expect(report.removed).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        sessionId: 's',
        offset,
        bytes: damaged.length - offset,
        file: paths.log,
        quarantinedAt: report.quarantined[0],
      }),
    ]);
    expect(quarantined(root)[0]!.bytes.equals(damaged.subarray(offset))).toBe(true);
    const after = await openJsonlStore({ root });
    expect(await after.append('s', evs(0, 1, true))).toEqual({ nextSeq: 1 });
    await after.close();
  });

  it('list shows a session whose last write was torn past a lagging sidecar with its committed summary, and repairs nothing', async () => {
    const root = tempDir();
    const paths = await seeded(root, 's', [evs(0, 2, true)]);
    const lagging = readFileSync(paths.summary);
    const store = await openJsonlStore({ root });
    await store.append('s', evs(2, 3, true));
    await store.close();
    writeFileSync(paths.summary, lagging);
    appendFileSync(paths.log, '{"seq":5,"type":"note","ti');
    const size = statSync(paths.log).size;
    const again = await openJsonlStore({ root });
    const page = await again.list();
    expect(page.problems).toEqual([]);
    expect(page.sessions.map((s) => [s.id, s.eventCount, s.committedSeq])).toEqual([['s', 5, 4]]);
    expect(statSync(paths.log).size).toBe(size);
    await again.close();
  });

  it('list reports bit rot past a lagging sidecar as a problem, not a shortened summary', async () => {
    const root = tempDir();
    const paths = await seeded(root, 's', [evs(0, 1, true)]);
    const lagging = readFileSync(paths.summary); // as after a SIGKILL before the close-time refresh
    const store = await openJsonlStore({ root });
    await store.append('s', evs(1, 1, true));
    await store.append('s', evs(2, 1, true));
    await store.close();
    writeFileSync(paths.summary, lagging);
    const text = readFileSync(paths.log, 'utf8');
    const damaged = Buffer.from(text, 'utf8');
    const at = text.indexOf('{"seq":1') + 3;
    damaged[at] = damaged[at]! ^ 0x5a; // batch 1 rots; batch 2 stays intact
    writeFileSync(paths.log, damaged);
    const again = await openJsonlStore({ root });
    const page = await again.list();
    expect(page.sessions).toEqual([]);
    expect(page.problems.map((p) => [p.id, p.error.code])).toEqual([['s', 'CORRUPT']]);
    await expect(again.update('s', { title: 'x' })).rejects.toMatchObject({ code: 'CORRUPT' });
    expect(readFileSync(paths.summary).equals(lagging)).toBe(true);
    await again.close();
  });

  it('removes a sidecar left by an earlier session of the id, durably, before publishing the new log', async () => {
    const root = tempDir();
    const paths = await seeded(root, 's', [evs(0, 4, true), evs(4, 4, true)]);
    const stale = readFileSync(paths.summary);
    const store = await openJsonlStore({ root });
    await store.delete('s');
    await store.close();
    writeFileSync(paths.summary, stale); // the delete's unlink of it was lost in a crash
    const f = faultyFs();
    const again = await openJsonlStore({ root, fs: f.fs });
    await again.create({ id: 's' });
    await again.append('s', evs(0, 1, true));
    const unlink = f.calls.indexOf(`unlink ${paths.summary}`);
    const publish = f.calls.indexOf(`link ${paths.log}`);
    const sync = f.calls.indexOf(`syncDir ${paths.dir}`, unlink);
    expect(unlink).toBeGreaterThanOrEqual(0);
    // Durable before the new log's name exists: a crash cannot keep the link and lose the unlink.
    expect(sync).toBeGreaterThan(unlink);
    expect(sync).toBeLessThan(publish);
    await again.close();
  });

  it('ignores the sidecar of an earlier session with the same id when telling a tear from damage', async () => {
    const root = tempDir();
    const paths = await seeded(root, 's', [evs(0, 4, true), evs(4, 4, true)]);
    const oldSidecar = readFileSync(paths.summary);
    const store = await openJsonlStore({ root });
    await store.delete('s');
    await store.create({ id: 's', createdAt: '2027-01-01T00:00:00.000Z' });
    await store.append('s', evs(0, 1, true));
    await store.close();
    // A crash brings the deleted session's sidecar back (its unlink was never made durable), and
    // the new log ends in a torn write well inside the old sidecar's logSize.
    writeFileSync(paths.summary, oldSidecar);
    expect(statSync(paths.log).size).toBeLessThan(JSON.parse(oldSidecar.toString()).logSize);
    appendFileSync(paths.log, '{"seq":1,"type":"note","ti');
    const again = await openJsonlStore({ root });
    const loaded = await again.load('s');
    expect(loaded.events).toEqual(evs(0, 1, true));
    expect(loaded.recovered).toMatchObject({ tornBytes: 26 });
    await again.close();
  });

  it('a tear past what the sidecar counted is still an unfinished write, repaired as before', async () => {
    const root = tempDir();
    const paths = await seeded(root, 's', [evs(0, 1, true), evs(1, 1, true)]);
    const size = statSync(paths.log).size;
    appendFileSync(paths.log, '{"seq":2,"type":"note","ti');
    const store = await openJsonlStore({ root });
    const loaded = await store.load('s');
    expect(loaded.events.map((e) => e.seq)).toEqual([0, 1]);
    expect(loaded.recovered).toMatchObject({ tornBytes: 26 });
    expect(statSync(paths.log).size).toBe(size);
    await store.close();
  });

  it('a damaged line before the tail is CORRUPT with file and offset, for load, read and append; verify reports it; repair quarantines it', async () => {
    const root = tempDir();
    const paths = await seeded(root, 's', [evs(0, 2, true), evs(2, 2, true), evs(4, 1, true)]);
    const text = readFileSync(paths.log, 'utf8');
    const offset = text.indexOf('{"seq":2');
    const damaged = Buffer.from(text, 'utf8');
    damaged[offset + 3] = 0x58;
    writeFileSync(paths.log, damaged);
    const store = await openJsonlStore({ root });
    const error = await store.load('s').catch((e: unknown) => e);
    expect(isTidemarkError(error, 'CORRUPT')).toBe(true);
    expect((error as { location: unknown }).location).toMatchObject({ file: paths.log, offset, seq: 2 });
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const event of store.read('s')) seen.push(event.seq);
      })(),
    ).rejects.toMatchObject({ code: 'CORRUPT' });
    expect(seen).toEqual([0, 1]);
    await expect(store.append('s', evs(5, 1))).rejects.toMatchObject({ code: 'CORRUPT' });
    expect(await store.has('s')).toBe(true);
    const page = await store.list();
    expect(page.sessions.map((s) => s.id).concat(page.problems.map((p) => p.id))).toEqual(['s']);
    await store.close();
    expect((await verifySession({ root }, 's')).problems).toMatchObject([
      { kind: 'corrupt', sessionId: 's', offset, file: paths.log },
    ]);
    expect(readFileSync(paths.log).equals(damaged)).toBe(true);

    const report = await repairSession({ root }, 's', { dropCorrupt: true });
    expect(report).toMatchObject({ corruptBytes: damaged.length - offset, eventCount: 2 });
    expect(report.removed).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        sessionId: 's',
        offset,
        bytes: damaged.length - offset,
        file: paths.log,
        quarantinedAt: report.quarantined[0],
      }),
    ]);
    expect(quarantined(root)[0]!.bytes.equals(damaged.subarray(offset))).toBe(true);
    const after = await openJsonlStore({ root });
    expect((await after.load('s')).events.map((e) => e.seq)).toEqual([0, 1]);
    expect(await after.append('s', evs(2, 1, true))).toEqual({ nextSeq: 3 });
    await after.close();
  });

  it('an unknown newer format is UNSUPPORTED_FORMAT', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    writeFileSync(
      paths.log,
      `${JSON.stringify({ format: 'tidemark-session', version: 9, meta: { id: 's' } })}\n`,
    );
    const store = await openJsonlStore({ root });
    await expect(store.load('s')).rejects.toMatchObject({ code: 'UNSUPPORTED_FORMAT' });
    await expect(store.append('s', evs(0, 1))).rejects.toMatchObject({ code: 'UNSUPPORTED_FORMAT' });
    await store.close();
  });

  it('a log truncated behind a live writer is CORRUPT on the next load, never a silently shorter history', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const store = await openJsonlStore({ root });
    await store.append('s', evs(4, 1));
    truncateSync(paths.log, 10);
    // No stat per append (that would cost the fast path), so this write lands at the recorded end.
    await store.append('s', evs(5, 1)).catch(() => undefined);
    await store.close();
    const again = await openJsonlStore({ root });
    await expect(again.load('s')).rejects.toMatchObject({ code: 'CORRUPT', location: { file: paths.log } });
    await again.close();
  });
});

describe('write faults', () => {
  it('strict appends write once on an O_DSYNC descriptor, with no separate fdatasync', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const faulty = faultyFs();
    const store = await openJsonlStore({ root, fs: faulty.fs });
    await store.append('s', evs(4, 1));
    const before = faulty.calls.length;
    await store.append('s', evs(5, 2));
    await store.append('s', [ev(7, 'turn/end')]);
    expect(faulty.calls.slice(before)).toEqual([`write ${paths.log}`, `write ${paths.log}`]);
    expect(faulty.opens.filter((o) => o.endsWith(paths.log))).toEqual([`r+dsync ${paths.log}`]);
    await store.close();
  });

  it('a failed write on the O_DSYNC descriptor rolls the log back, never touches that descriptor again, and a retry succeeds', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const faulty = faultyFs();
    const store = await openJsonlStore({ root, fs: faulty.fs });
    await store.append('s', evs(4, 1));
    const size = statSync(paths.log).size;
    let failNext = true;
    faulty.rule = (call, path) => {
      if (call === 'write' && path === paths.log && failNext) {
        failNext = false;
        return 'EIO';
      }
      return undefined;
    };
    const opened = faulty.opens.length;
    const error = await store.append('s', evs(5, 2)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'IO', errno: 'EIO' });
    expect(statSync(paths.log).size).toBe(size);
    // The rollback reopened the log: the failed descriptor is closed, not reused.
    expect(faulty.opens.slice(opened)).toEqual([`r+dsync ${paths.log}`]);
    expect(await store.append('s', evs(5, 2))).toEqual({ nextSeq: 7 });
    expect(faulty.syncAfterFailure).toBe(0);
    expect((await store.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    await store.close();
  });

  it('a failed fdatasync rolls the log back, is never retried on the same descriptor, and a retry succeeds', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const size = statSync(paths.log).size;
    let failNext = true;
    const faulty = faultyFs((call, path) => {
      if (call === 'datasync' && path === paths.log && failNext) {
        failNext = false;
        return 'EIO';
      }
      return undefined;
    });
    // Relaxed mode still syncs a boundary batch with fdatasync.
    const store = await openJsonlStore({ root, fs: faulty.fs, durability: 'relaxed' });
    const error = await store.append('s', evs(4, 2, true)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'IO', errno: 'EIO' });
    expect(statSync(paths.log).size).toBe(size);
    expect(await store.append('s', evs(4, 2, true))).toEqual({ nextSeq: 6 });
    expect(faulty.syncAfterFailure).toBe(0);
    expect((await store.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    await store.close();
  });

  it('a short write (ENOSPC) leaves the log as it was', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const bytes = readFileSync(paths.log);
    const faulty = faultyFs();
    const store = await openJsonlStore({ root, fs: faulty.fs });
    expect(await store.has('s')).toBe(true);
    await store.load('s'); // open the writer first, so that the short write hits the append
    await store.append('s', evs(4, 1));
    const afterOne = readFileSync(paths.log);
    faulty.shortWrite = 17;
    await expect(store.append('s', evs(5, 3))).rejects.toMatchObject({
      code: 'IO',
      errno: 'ENOSPC',
      retryable: true,
    });
    expect(readFileSync(paths.log).equals(afterOne)).toBe(true);
    expect(afterOne.subarray(0, bytes.length).equals(bytes)).toBe(true);
    expect(await store.append('s', evs(5, 3))).toEqual({ nextSeq: 8 });
    await store.close();
  });

  it('a failed first publish leaves no session behind and a retry works', async () => {
    const root = tempDir();
    let fail = true;
    const faulty = faultyFs((call) => (call === 'link' && fail ? 'EIO' : undefined));
    const store = await openJsonlStore({ root, fs: faulty.fs });
    await store.create({ id: 'n' });
    await expect(store.append('n', evs(0, 1))).rejects.toMatchObject({ code: 'IO' });
    expect(await store.has('n')).toBe(false);
    fail = false;
    expect(await store.append('n', evs(0, 1))).toEqual({ nextSeq: 1 });
    const bucket = sessionPaths(root, bucketOf(undefined), 'n').dir;
    expect(readdirSync(bucket).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
    await store.close();
  });

  it('relaxed durability syncs only at boundaries and at close', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const faulty = faultyFs();
    const store = await openJsonlStore({ root, fs: faulty.fs, durability: 'relaxed' });
    await store.append('s', evs(4, 1));
    const syncs = () => faulty.calls.filter((c) => c === `datasync ${paths.log}`).length;
    const base = syncs();
    await store.append('s', evs(5, 1));
    await store.append('s', evs(6, 1));
    expect(syncs()).toBe(base);
    await store.append('s', [ev(7, 'turn/end')]);
    expect(syncs()).toBe(base + 1);
    await store.append('s', evs(8, 1));
    await store.close();
    expect(syncs()).toBe(base + 2);
  });
});

describe('files on disk', () => {
  it('directories are 0700 and files 0600', async () => {
    const root = join(tempDir(), 'nested', 'sessions');
    const paths = await seeded(root);
    expect(statSync(root).mode & 0o777).toBe(0o700);
    expect(statSync(paths.dir).mode & 0o777).toBe(0o700);
    expect(statSync(paths.log).mode & 0o777).toBe(0o600);
    expect(statSync(paths.summary).mode & 0o777).toBe(0o600);
  });

  it('a symlink planted at the log path is not written through', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const outside = join(tempDir(), 'victim');
    writeFileSync(outside, 'precious');
    const real = readFileSync(paths.log);
    writeFileSync(`${paths.log}.bak`, real);
    // replace the log with a link to a file outside the store
    unlinkSync(paths.log);
    symlinkSync(outside, paths.log);
    const store = await openJsonlStore({ root });
    const error = await store.append('s', evs(4, 1)).catch((e: unknown) => e);
    expect(isTidemarkError(error)).toBe(true);
    expect(readFileSync(outside, 'utf8')).toBe('precious');
    await store.close();
  });

  it('a bucket replaced by a symlink is refused for writes (O_NOFOLLOW guards only the last component)', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const elsewhere = join(tempDir(), 'elsewhere');
    renameSync(paths.dir, elsewhere);
    symlinkSync(elsewhere, paths.dir);
    const before = readdirSync(elsewhere).sort();
    const store = await openJsonlStore({ root });
    await expect(store.append('s', evs(4, 1))).rejects.toMatchObject({ code: 'IO', errno: 'ELOOP' });
    await expect(store.update('s', { title: 'x' })).rejects.toMatchObject({ code: 'IO' });
    await expect(store.delete('s')).rejects.toMatchObject({ code: 'IO' });
    expect(readdirSync(elsewhere).sort()).toEqual(before);
    await store.close();
  });

  it('a symlink planted at the sidecar path is replaced, not followed', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const outside = join(tempDir(), 'victim');
    writeFileSync(outside, 'precious');
    unlinkSync(paths.summary);
    symlinkSync(outside, paths.summary);
    const store = await openJsonlStore({ root });
    await store.update('s', { title: 't' });
    expect(readFileSync(outside, 'utf8')).toBe('precious');
    expect((await store.list()).sessions[0]?.title).toBe('t');
    await store.close();
  });
});

describe('summary sidecars', () => {
  it('list rebuilds a missing, stale or garbled sidecar from the log, keeping update fields when it can', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    const store = await openJsonlStore({ root });
    await store.update('s', { title: 'kept' });
    await store.append('s', evs(4, 1, true));
    // The writer is still open: its sidecar lags; list brings it forward from the log.
    expect((await store.list()).sessions[0]).toMatchObject({ eventCount: 5, committedSeq: 4, title: 'kept' });
    await store.close();
    writeFileSync(
      paths.summary,
      '{"format":"tidemark-summary","version":1,"logSize":3,"summary":{"__proto__":{"x":1}}}',
    );
    const again = await openJsonlStore({ root });
    const page = await again.list();
    expect(page.sessions[0]).toMatchObject({ id: 's', eventCount: 5, committedSeq: 4 });
    expect(({} as Record<string, unknown>).x).toBeUndefined();
    unlinkSync(paths.summary);
    expect((await again.list()).sessions[0]).toMatchObject({ id: 's', eventCount: 5 });
    expect((await again.load('s')).summary).toEqual((await again.list()).sessions[0]);
    await again.close();
  });

  it('a session whose sidecar and log are both unreadable is a problem, never silently absent', async () => {
    const root = tempDir();
    const paths = await seeded(root);
    writeFileSync(paths.summary, 'not json');
    writeFileSync(paths.log, 'not a log either\n');
    const store = await openJsonlStore({ root });
    const page = await store.list();
    expect(page.sessions).toEqual([]);
    expect(page.problems.map((p) => [p.id, p.error.code])).toEqual([['s', 'CORRUPT']]);
    await store.close();
  });

  it('such a problem has no place in the order, so every page reports it (documented)', async () => {
    const root = tempDir();
    for (const id of ['a', 'b', 'c']) await seeded(root, id);
    const paths = await seeded(root, 'x');
    writeFileSync(paths.summary, 'not json');
    writeFileSync(paths.log, 'not a log either\n');
    const store = await openJsonlStore({ root });
    const pages: { ids: string[]; problems: string[] }[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.list({ limit: 2, ...(cursor !== undefined && { cursor }) });
      pages.push({ ids: page.sessions.map((s) => s.id), problems: page.problems.map((p) => p.id) });
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(pages.flatMap((p) => p.ids).sort()).toEqual(['a', 'b', 'c']);
    expect(pages).toHaveLength(2);
    for (const page of pages) expect(page.problems).toEqual(['x']);
    await store.close();
  });
});
