// O_DSYNC handles (`'r+dsync'`) in the harness's ports: memfs accepts the flag, FaultyFs traces and
// injects on them like any handle, and a failed write on one leaves its data behind, as a failed
// fdatasync does. (CrashFs's durability rules for them are in crash-fs.test.ts.)
import { describe, expect, it } from 'vitest';
import { FaultyFs, memfsFileSystem } from '../src/index.js';

const text = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

async function seeded() {
  const base = memfsFileSystem();
  await base.mkdir('/d', { recursive: true });
  const h = await base.open('/d/log', 'a');
  await h.write(text('head\n'), 0, 5, null);
  await h.close();
  return base;
}

describe("'r+dsync' handles in the harness", () => {
  it('memfs opens them read-write (it has no O_DSYNC) and refuses a missing file like r+', async () => {
    const base = await seeded();
    const h = await base.open('/d/log', 'r+dsync');
    expect(await h.write(text('one\n'), 0, 4, 5)).toBe(4);
    const buffer = new Uint8Array(9);
    expect(await h.read(buffer, 0, 9, 0)).toBe(9);
    expect(dec(buffer)).toBe('head\none\n');
    await h.close();
    await expect(base.open('/d/none', 'r+dsync')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('FaultyFs traces the open and the writes of a dsync handle and injects on them', async () => {
    const base = await seeded();
    const faulty = new FaultyFs(base, { plans: [{ at: 1, ops: ['open'], path: /log$/ }] });
    await expect(faulty.fs.open('/d/log', 'r+dsync')).rejects.toMatchObject({ code: 'EIO' });
    const h = await faulty.fs.open('/d/log', 'r+dsync');
    await h.write(text('one\n'), 0, 4, 5);
    await h.close();
    expect(faulty.trace.map((e) => `${e.op} ${e.path} ${e.outcome}`)).toEqual([
      'open /d/log injected',
      'open /d/log ok',
      'write /d/log ok',
      'close /d/log ok',
    ]);
  });

  it('an injected write error on a dsync handle leaves the whole buffer written, on a plain handle nothing', async () => {
    for (const [flags, after] of [
      ['r+dsync', 'head\none\n'],
      ['r+', 'head\n'],
    ] as const) {
      const base = await seeded();
      const faulty = new FaultyFs(base, { plans: [{ at: 1, ops: ['write'], errno: 'EIO' }] });
      const h = await faulty.fs.open('/d/log', flags);
      await expect(h.write(text('one\n'), 0, 4, 5)).rejects.toMatchObject({ code: 'EIO' });
      await h.close();
      expect(dec(await base.readFile('/d/log'))).toBe(after);
      expect(faulty.injected).toBe(1);
    }
  });

  it('a short write on a dsync handle stores the first half, then fails', async () => {
    const base = await seeded();
    const faulty = new FaultyFs(base, { plans: [{ at: 1, ops: ['write'], kind: 'short-write' }] });
    const h = await faulty.fs.open('/d/log', 'r+dsync');
    await expect(h.write(text('one\n'), 0, 4, 5)).rejects.toMatchObject({ code: 'ENOSPC' });
    await h.close();
    expect(dec(await base.readFile('/d/log'))).toBe('head\non');
  });
});
