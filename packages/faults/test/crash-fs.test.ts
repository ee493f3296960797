import { describe, expect, it } from 'vitest';
import {
  CrashFs,
  contentVariants,
  crashStatesAt,
  cutOffsets,
  DENSE_TAIL_BYTES,
  dirOpSubsets,
  enumerateCrashStates,
  FULL_CRASH_LIMITS,
  materialize,
  QUICK_CRASH_LIMITS,
} from '../src/index.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

async function writeFile(fs: CrashFs, path: string, data: string, sync: boolean) {
  const handle = await fs.open(path, 'a');
  const bytes = enc(data);
  await handle.write(bytes, 0, bytes.length, null);
  if (sync) await handle.datasync();
  await handle.close();
}

async function freshDisk() {
  const fs = new CrashFs();
  await fs.mkdir('/d', { recursive: true });
  fs.checkpoint();
  return fs;
}

describe('CrashFs', () => {
  it('keeps synced data and a synced entry in every crash state', async () => {
    const fs = await freshDisk();
    await writeFile(fs, '/d/log', 'line1\n', true);
    await fs.syncDir('/d');
    await writeFile(fs, '/d/log', 'line2\n', false);
    const states = enumerateCrashStates(fs.crashPoint());
    expect(states.length).toBeGreaterThan(6);
    for (const state of states) expect(dec(state.files.get('/d/log'))?.startsWith('line1\n')).toBe(true);
    const contents = new Set(states.map((s) => dec(s.files.get('/d/log'))));
    expect(contents).toContain('line1\n');
    expect(contents).toContain('line1\nline2\n');
    // Cut at every byte offset of the short pending write.
    for (let cut = 1; cut < 6; cut++) expect(contents).toContain(`line1\n${'line2\n'.slice(0, cut)}`);
    expect(contents).toContain('line1\n\0\0\0\0\0\0');
    expect([...states].some((s) => /garbage/.test(s.label))).toBe(true);
  });

  it('loses an unsynced directory entry in some state and keeps it in another, even with the file synced', async () => {
    const fs = await freshDisk();
    await writeFile(fs, '/d/new', 'data\n', true);
    const states = enumerateCrashStates(fs.crashPoint());
    expect(states.some((s) => !s.files.has('/d/new'))).toBe(true);
    expect(states.some((s) => dec(s.files.get('/d/new')) === 'data\n')).toBe(true);
    await fs.syncDir('/d');
    for (const state of enumerateCrashStates(fs.crashPoint()))
      expect(dec(state.files.get('/d/new'))).toBe('data\n');
  });

  it('models an unsynced rename as lost or kept, never both names gone', async () => {
    const fs = await freshDisk();
    await writeFile(fs, '/d/tmp', 'x', true);
    await fs.syncDir('/d');
    await fs.rename('/d/tmp', '/d/final');
    const states = enumerateCrashStates(fs.crashPoint());
    const names = new Set(states.map((s) => [...s.files.keys()].sort().join(',')));
    expect(names).toEqual(new Set(['/d/tmp', '/d/final']));
  });

  it('loses files of a directory whose own creation was not synced', async () => {
    const fs = await freshDisk();
    await fs.mkdir('/d/bucket');
    await writeFile(fs, '/d/bucket/log', 'a\n', true);
    await fs.syncDir('/d/bucket');
    const states = enumerateCrashStates(fs.crashPoint());
    expect(states.some((s) => !s.dirs.has('/d/bucket') && !s.files.has('/d/bucket/log'))).toBe(true);
    await fs.syncDir('/d');
    for (const state of enumerateCrashStates(fs.crashPoint()))
      expect(dec(state.files.get('/d/bucket/log'))).toBe('a\n');
  });

  it('keeps a truncate volatile until synced', async () => {
    const fs = await freshDisk();
    await writeFile(fs, '/d/log', 'abcdef', true);
    await fs.syncDir('/d');
    const handle = await fs.open('/d/log', 'r+');
    await handle.truncate(2);
    const contents = new Set(enumerateCrashStates(fs.crashPoint()).map((s) => dec(s.files.get('/d/log'))));
    expect(contents).toEqual(new Set(['abcdef', 'ab']));
    await handle.datasync();
    const after = new Set(enumerateCrashStates(fs.crashPoint()).map((s) => dec(s.files.get('/d/log'))));
    expect(after).toEqual(new Set(['ab']));
  });

  it('makes a write on a dsync handle durable when it returns (as write + datasync); a plain write is not', async () => {
    const fs = await freshDisk();
    await writeFile(fs, '/d/log', 'head\n', true);
    await fs.syncDir('/d');
    const dsync = await fs.open('/d/log', 'r+dsync');
    expect(await dsync.write(enc('one\n'), 0, 4, 5)).toBe(4);
    for (const state of enumerateCrashStates(fs.crashPoint()))
      expect(dec(state.files.get('/d/log'))).toBe('head\none\n');
    const plain = await fs.open('/d/log', 'r+');
    await plain.write(enc('two\n'), 0, 4, 9);
    const contents = new Set(enumerateCrashStates(fs.crashPoint()).map((s) => dec(s.files.get('/d/log'))));
    expect(contents).toContain('head\none\n');
    expect(contents).toContain('head\none\ntwo\n');
    for (const content of contents) expect(content?.startsWith('head\none\n')).toBe(true);
    // A later dsync write flushes the file as fdatasync does, the plain write before it included.
    await dsync.write(enc('three\n'), 0, 6, 13);
    for (const state of enumerateCrashStates(fs.crashPoint()))
      expect(dec(state.files.get('/d/log'))).toBe('head\none\ntwo\nthree\n');
    await dsync.close();
    await plain.close();
  });

  it('traces a dsync write as write then datasync, so a crash during the call may still tear it', async () => {
    const points: { op: string; contents: Set<string | undefined> }[] = [];
    const fs: CrashFs = new CrashFs((_index, op) => {
      if (op === 'write' || op === 'datasync')
        points.push({
          op,
          contents: new Set(enumerateCrashStates(fs.crashPoint(op)).map((s) => dec(s.files.get('/d/log')))),
        });
    });
    await fs.mkdir('/d', { recursive: true });
    await writeFile(fs, '/d/log', 'head\n', true);
    await fs.syncDir('/d');
    fs.checkpoint();
    points.length = 0;
    const handle = await fs.open('/d/log', 'r+dsync');
    await handle.write(enc('one\n'), 0, 4, 5);
    await handle.close();
    expect(points.map((p) => p.op)).toEqual(['write', 'datasync']);
    expect(points[0]!.contents).toContain('head\n');
    expect(points[0]!.contents).toContain('head\non');
    expect(points[1]!.contents).toEqual(new Set(['head\none\n']));
  });

  it('does not make a new directory entry durable with a dsync write (data only, as fdatasync)', async () => {
    const fs = await freshDisk();
    await writeFile(fs, '/d/new', 'a\n', false);
    const handle = await fs.open('/d/new', 'r+dsync');
    await handle.write(enc('b\n'), 0, 2, 2);
    await handle.close();
    const states = enumerateCrashStates(fs.crashPoint());
    expect(states.some((s) => !s.files.has('/d/new'))).toBe(true);
    for (const state of states) {
      const content = state.files.get('/d/new');
      if (content !== undefined) expect(dec(content)).toBe('a\nb\n');
    }
  });

  it('materializes a state as a working FileSystem with hard links preserved as content', async () => {
    const fs = await freshDisk();
    await writeFile(fs, '/d/log', 'hello\n', true);
    await fs.link('/d/log', '/d/alias');
    await fs.syncDir('/d');
    const [state] = enumerateCrashStates(fs.crashPoint());
    const disk = materialize(state!);
    expect((await disk.readdir('/d')).sort()).toEqual(['alias', 'log']);
    expect(dec(await disk.readFile('/d/alias'))).toBe('hello\n');
    const h = await disk.open('/d/log', 'a');
    await h.write(enc('more'), 0, 4, null);
    await h.close();
    expect(dec(await disk.readFile('/d/log'))).toBe('hello\nmore');
  });

  it('reports the live file system as memfs does (errors are real)', async () => {
    const fs = await freshDisk();
    await writeFile(fs, '/d/file', 'x', true);
    await expect(fs.mkdir('/d/file/sub')).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(fs.open('/d/file', 'wx')).rejects.toMatchObject({ code: 'EEXIST' });
    await expect(fs.readFile('/d/none')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('crash-state enumeration rules', () => {
  it('cuts a long write at 0, 1, len-1 and at line boundaries, a short one at every byte', () => {
    expect(cutOffsets(enc('abc'))).toEqual([0, 1, 2]);
    const long = enc(`${'a'.repeat(40)}\n${'b'.repeat(40)}\n`);
    const cuts = cutOffsets(long);
    for (const c of [0, 1, 40, 41, long.length - 1]) expect(cuts).toContain(c);
    expect(cuts.length).toBeLessThan(long.length);
  });

  it('cuts a write at its last byte and before every newline in the quick run, at every byte in the full run', () => {
    const batch = enc(`${'{"seq":1}'.padEnd(120, ' ')}\n${'{"seq":2}'.padEnd(90, ' ')}\n`);
    const quick = cutOffsets(batch, QUICK_CRASH_LIMITS);
    // A line missing only its newline, for each line, and the write missing only its last byte.
    for (const c of [120, 121, 211, batch.length - 1]) expect(quick).toContain(c);
    expect(cutOffsets(batch, FULL_CRASH_LIMITS)).toEqual(Array.from({ length: batch.length }, (_, i) => i));
  });

  it('cuts each write densely once, at the first point where it is pending, then at the sampled offsets', async () => {
    const fs = await freshDisk();
    await writeFile(fs, '/d/log', 'old\n', true);
    await fs.syncDir('/d');
    const first = `${'a'.repeat(60)}é✓${'c'.repeat(60)}\n`;
    await writeFile(fs, '/d/log', first, false);
    const p0 = fs.crashPoint('write');
    await writeFile(fs, '/d/log', `${'b'.repeat(120)}\n`, false);
    const p1 = fs.crashPoint('write');
    const recorded = [{ point: p0 }, { point: p1 }];
    const cutsOf = (states: { label: string }[], op: number) =>
      new Set(
        states.flatMap((s) => s.label.match(new RegExp(`op ${op} torn at (\\d+)/`))?.[1] ?? []).map(Number),
      );
    const firstLength = enc(first).length;
    const dense = cutsOf(crashStatesAt(recorded, 0, QUICK_CRASH_LIMITS), 0);
    // At its first point the write is cut at every byte of its start and of its last 32 bytes, and
    // before, inside and after each multi-byte character (é at 60-61, ✓ at 62-64).
    for (let c = 1; c < 8; c++) expect(dense).toContain(c);
    for (let c = firstLength - DENSE_TAIL_BYTES; c < firstLength; c++) expect(dense).toContain(c);
    for (const c of [60, 61, 62, 63, 64, 65]) expect(dense).toContain(c);
    // ... not at every byte of the ASCII runs between them, which the full sweep cuts.
    expect(dense.size).toBeLessThan(firstLength / 2);
    expect(dense).not.toContain(30);
    // At the next point it is still pending: sampled cuts of it, dense cuts of the new write.
    const later = crashStatesAt(recorded, 1, QUICK_CRASH_LIMITS);
    expect(cutsOf(later, 0).size).toBeLessThan(dense.size);
    expect(cutsOf(later, 0)).toContain(firstLength - 1);
    expect(cutsOf(later, 1)).toContain(120 - DENSE_TAIL_BYTES + 1);
    // A caller that names the writes itself gets every byte of those and the sampled cuts of the rest.
    const writes = [...p0.inodes.values()].flatMap((inode) =>
      inode.pending.filter((op) => op.kind === 'write'),
    );
    const every = crashStatesAt(recorded, 0, { ...QUICK_CRASH_LIMITS, cutEveryByteOf: new Set(writes) });
    expect(cutsOf(every, 0).size).toBeGreaterThanOrEqual(firstLength - 1);
    const sampled = crashStatesAt(recorded, 0, { ...QUICK_CRASH_LIMITS, cutEveryByteOf: new Set() });
    expect(cutsOf(sampled, 0).size).toBeLessThan(dense.size);
  });

  it('tries every keep/lose subset of few directory operations and a bounded family of many', () => {
    expect(dirOpSubsets(2)).toHaveLength(4);
    const many = dirOpSubsets(10);
    expect(many.length).toBe(11 + 10);
    expect(many).toContainEqual(Array(10).fill(true));
    expect(many).toContainEqual(Array(10).fill(false));
  });

  it("enumerates each directory's operations on their own, so an unsynced directory cannot crowd out another's", async () => {
    const fs = new CrashFs();
    await fs.mkdir('/locks', { recursive: true });
    await fs.mkdir('/d', { recursive: true });
    fs.checkpoint();
    // Five never-synced entries in /locks (more than the exhaustive bound of 4), then two in /d.
    for (let i = 0; i < 5; i++) await writeFile(fs, `/locks/l${i}`, 'x', true);
    await writeFile(fs, '/d/a', 'a', true);
    await writeFile(fs, '/d/b', 'b', true);
    const states = enumerateCrashStates(fs.crashPoint());
    const inD = (s: { files: Map<string, Uint8Array> }) =>
      ['/d/a', '/d/b'].filter((path) => s.files.has(path)).join(',');
    // With the 7 operations in one list, only ordered prefixes and single losses were tried, so
    // "/d/b kept, /d/a lost" with every lock entry kept never came up.
    const locksKept = (s: { files: Map<string, Uint8Array> }) =>
      [0, 1, 2, 3, 4].every((i) => s.files.has(`/locks/l${i}`));
    const locksLost = (s: { files: Map<string, Uint8Array> }) =>
      [0, 1, 2, 3, 4].every((i) => !s.files.has(`/locks/l${i}`));
    for (const subset of ['', '/d/a', '/d/b', '/d/a,/d/b']) {
      expect(
        states.some((s) => locksKept(s) && inD(s) === subset),
        `locks kept, ${subset}`,
      ).toBe(true);
      expect(
        states.some((s) => locksLost(s) && inD(s) === subset),
        `locks lost, ${subset}`,
      ).toBe(true);
    }
  });

  it('lists durable, whole-prefix, torn and filled contents of a file', () => {
    const labels = contentVariants({
      durable: enc('A'),
      pending: [{ kind: 'write', position: 1, data: enc('BC') }],
    }).map((v) => dec(v.bytes));
    expect(labels).toEqual(['A', 'ABC', 'AB', 'A\0\0', expect.any(String)]);
  });
});
