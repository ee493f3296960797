import { describe, expect, it } from 'vitest';
import {
  AckLedger,
  type CrashChoice,
  decodeStraceString,
  enumerateCrashChoices,
  materializeTraced,
  parseStraceLog,
  TracedDisk,
  type TraceOp,
} from '../src/index.js';

const hex = (text: string) =>
  [...Buffer.from(text, 'latin1')].map((b) => `\\x${b.toString(16).padStart(2, '0')}`).join('');
const fd = (n: number, path: string) => `${n}<${hex(path)}>`;
const str = (text: string) => `"${hex(text)}"`;

describe('reading an strace log', () => {
  it('decodes -xx strings and the escapes strace uses', () => {
    expect(decodeStraceString('\\x61\\x62c\\n').toString()).toBe('abc\n');
  });

  it('keeps the operations under the root, in the order the calls returned, with stdout lines', () => {
    const log = [
      `7 openat(AT_FDCWD<${hex('/w')}>, ${str('/r/db')}, O_RDWR|O_CREAT|O_CLOEXEC, 0644) = ${fd(5, '/r/db')}`,
      `7 openat(AT_FDCWD<${hex('/w')}>, ${str('/etc/x')}, O_RDONLY) = ${fd(6, '/etc/x')}`,
      `8 pwrite64(${fd(5, '/r/db')}, ${str('late')}, 4, 8 <unfinished ...>`,
      `7 write(${fd(1, 'pipe:[1]')}, ${str('ack p0 0 1\n')}, 11) = 11`,
      `8 <... pwrite64 resumed>) = 4`,
      `7 fdatasync(${fd(5, '/r/db')}) = 0`,
      `7 ftruncate(${fd(5, '/r/db')}, 2) = 0`,
      `7 unlink(${str('/r/missing')}) = -1 ENOENT (No such file or directory)`,
      `7 rename(${str('/r/db')}, ${str('/r/db2')}) = 0`,
      `7 openat(AT_FDCWD<${hex('/r')}>, ${str('rel')}, O_RDWR|O_CREAT, 0600) = ${fd(9, '/r/rel')}`,
    ].join('\n');
    const ops = parseStraceLog(log, '/r');
    expect(ops).toEqual<TraceOp[]>([
      { kind: 'create', path: '/r/db' },
      { kind: 'say', line: 'ack p0 0 1\n' },
      { kind: 'write', path: '/r/db', offset: 8, data: Buffer.from('late') },
      { kind: 'sync', path: '/r/db' },
      { kind: 'truncate', path: '/r/db', size: 2 },
      { kind: 'rename', from: '/r/db', to: '/r/db2' },
      { kind: 'create', path: '/r/rel' },
    ]);
  });

  it('refuses a write whose data strace cut short', () => {
    const log = `7 pwrite64(${fd(5, '/r/db')}, "\\x61"..., 4096, 0) = 4096`;
    expect(() => parseStraceLog(log, '/r')).toThrow(/cut a string/);
  });
});

const W = (path: string, offset: number, text: string): TraceOp => ({
  kind: 'write',
  path,
  offset,
  data: Buffer.from(text),
});
const state = (disk: TracedDisk, choice: Partial<CrashChoice>) =>
  Object.fromEntries(
    [
      ...materializeTraced(disk.snapshot(), { kept: new Map(), dirKept: new Set(), label: '', ...choice }),
    ].map(([path, data]) => [path, data.toString()]),
  );

describe('the disk states a power loss leaves', () => {
  it('loses a created file until its directory is synced, whatever the file sync did', () => {
    const disk = new TracedDisk('/r');
    for (const op of [
      { kind: 'create', path: '/r/a' },
      W('/r/a', 0, 'abc'),
      { kind: 'sync', path: '/r/a' },
    ] as TraceOp[])
      disk.apply(op);
    expect(state(disk, {})).toEqual({});
    expect(state(disk, { dirKept: new Set([0]) })).toEqual({ '/r/a': 'abc' });
    disk.apply({ kind: 'sync', path: '/r' });
    expect(state(disk, {})).toEqual({ '/r/a': 'abc' });
  });

  it('keeps a prefix of the unsynced writes of a file, or tears the first lost one', () => {
    const disk = new TracedDisk('/r');
    for (const op of [
      { kind: 'create', path: '/r/a' },
      { kind: 'sync', path: '/r' },
      W('/r/a', 0, 'one'),
      { kind: 'sync', path: '/r/a' },
      W('/r/a', 3, 'two'),
      W('/r/a', 6, 'six'),
    ] as TraceOp[])
      disk.apply(op);
    const inode = disk.snapshot().names.get('/r/a')!;
    expect(state(disk, {})).toEqual({ '/r/a': 'one' });
    expect(state(disk, { kept: new Map([[inode, 1]]) })).toEqual({ '/r/a': 'onetwo' });
    expect(state(disk, { kept: new Map([[inode, 1]]), torn: { inode, bytes: 1 } })).toEqual({
      '/r/a': 'onetwos',
    });
    const labels = enumerateCrashChoices(disk.snapshot(), { full: true }).map((c) => c.label);
    expect(labels).toContain('a keeps 1 of 2 unsynced writes, other files lose theirs');
    expect(labels).toContain('every unsynced write and directory operation lost');
  });

  it('brings an unlinked file back when the unlink was never made durable', () => {
    const disk = new TracedDisk('/r');
    for (const op of [
      { kind: 'create', path: '/r/wal' },
      W('/r/wal', 0, 'frames'),
      { kind: 'sync', path: '/r/wal' },
      { kind: 'sync', path: '/r' },
      { kind: 'unlink', path: '/r/wal' },
    ] as TraceOp[])
      disk.apply(op);
    expect(state(disk, {})).toEqual({ '/r/wal': 'frames' });
    expect(state(disk, { dirKept: new Set([0]) })).toEqual({});
    const lost = enumerateCrashChoices(disk.snapshot(), { full: true }).find((c) =>
      c.label.startsWith('unlink'),
    );
    expect(lost?.label).toBe('unlink wal lost, all else kept');
  });
});

describe('what each durability mode must show after a power loss', () => {
  const ledger = new AckLedger();
  // seq 3 is a turn/end: the second batch closes a turn.
  for (const line of [
    'try p0 0 1',
    'ack p0 0 1',
    'try p0 1 3',
    'ack p0 1 3',
    'try p0 4 1',
    'ack p0 4 1',
    'try p0 5 2',
  ])
    ledger.read(line);
  const seqs = (events: string[]) => events.map((e) => (JSON.parse(e) as { seq: number }).seq);

  it('strict: every acknowledged batch, then at most the whole batch in flight', () => {
    const session = ledger.model(['p0'], 'strict').sessions.get('p0')!;
    expect(seqs(session.acked)).toEqual([0, 1, 2, 3, 4]);
    expect(session.inDoubt.map(seqs)).toEqual([[5, 6]]);
  });

  it('relaxed: everything up to the last batch closing a turn, then whole batches that may be lost', () => {
    const session = ledger.model(['p0'], 'relaxed').sessions.get('p0')!;
    expect(seqs(session.acked)).toEqual([0, 1, 2, 3]);
    expect(session.inDoubt.map(seqs)).toEqual([[4], [4, 5, 6]]);
    expect(ledger.signature('relaxed')).not.toBe(ledger.signature('strict'));
  });
});
