import { describe, expect, it } from 'vitest';
import { decideFault, FaultyFs, memfsFileSystem, SWEEP_ERRNOS } from '../src/index.js';

const text = (s: string) => new TextEncoder().encode(s);

async function setup(plans: ConstructorParameters<typeof FaultyFs>[1] = {}) {
  const base = memfsFileSystem();
  await base.mkdir('/d', { recursive: true });
  return { base, faulty: new FaultyFs(base, plans) };
}

describe('decideFault', () => {
  it('fires once at the Nth matching call, or persistently from N on', () => {
    const once = [{ plan: { at: 2 }, seen: 0 }];
    expect([1, 2, 3, 4].map(() => decideFault(once, 'write', '/x') !== undefined)).toEqual([
      false,
      true,
      false,
      false,
    ]);
    const persistent = [{ plan: { at: 2, mode: 'persistent' as const }, seen: 0 }];
    expect([1, 2, 3, 4].map(() => decideFault(persistent, 'write', '/x') !== undefined)).toEqual([
      false,
      true,
      true,
      true,
    ]);
  });

  it('counts only calls that match the operation and path filters', () => {
    const states = [{ plan: { at: 2, ops: ['datasync'], path: /\.jsonl$/ }, seen: 0 }];
    const calls: [string, string][] = [
      ['datasync', '/a.jsonl'],
      ['write', '/a.jsonl'],
      ['datasync', '/a.json'],
      ['datasync', '/b.jsonl'],
    ];
    expect(calls.map(([op, path]) => decideFault(states, op, path) !== undefined)).toEqual([
      false,
      false,
      false,
      true,
    ]);
  });
});

describe('FaultyFs', () => {
  it('traces every port and handle call, including methods it does not know about', async () => {
    const { base, faulty } = await setup();
    const extended = Object.assign(base, { copyFile: async (_a: string, _b: string) => {} });
    const wrapped = new FaultyFs(extended);
    const handle = await wrapped.fs.open('/d/f', 'wx');
    await handle.write(text('hello'), 0, 5, 0);
    await handle.datasync();
    await handle.close();
    await (wrapped.fs as unknown as typeof extended).copyFile('/d/f', '/d/g');
    expect(wrapped.trace.map((e) => e.op)).toEqual(['open', 'write', 'datasync', 'close', 'copyFile']);
    expect(wrapped.trace[1]?.path).toBe('/d/f');
    expect(faulty.trace).toEqual([]);
  });

  it.each(SWEEP_ERRNOS)(
    'injects %s as a real-looking errno error without touching storage',
    async (errno) => {
      const { base, faulty } = await setup({ plans: [{ at: 1, ops: ['rename'], errno }] });
      await base.open('/d/a', 'wx').then((h) => h.close());
      const error = await faulty.fs.rename('/d/a', '/d/b').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect(error).toMatchObject({ code: errno, syscall: 'rename', path: '/d/a' });
      expect((error as { errno: number }).errno).toBeLessThan(0);
      expect(await base.readdir('/d')).toEqual(['a']);
      expect(faulty.injected).toBe(1);
      await faulty.fs.rename('/d/a', '/d/b');
      expect(await base.readdir('/d')).toEqual(['b']);
    },
  );

  it('makes a short write store part of the buffer, then fail', async () => {
    const { base, faulty } = await setup({ plans: [{ at: 1, ops: ['write'], kind: 'short-write' }] });
    const handle = await faulty.fs.open('/d/log', 'a');
    await expect(handle.write(text('0123456789'), 0, 10, null)).rejects.toMatchObject({ code: 'ENOSPC' });
    await handle.close();
    expect(new TextDecoder().decode(await base.readFile('/d/log'))).toBe('01234');
  });

  it('stops injecting once lifted, and records real errors as errors', async () => {
    const { faulty } = await setup({ plans: [{ at: 1, mode: 'persistent' }] });
    await expect(faulty.fs.readdir('/d')).rejects.toMatchObject({ code: 'EIO' });
    faulty.lift();
    await expect(faulty.fs.readdir('/d')).resolves.toEqual([]);
    await expect(faulty.fs.readFile('/d/missing')).rejects.toMatchObject({ code: 'ENOENT' });
    expect(faulty.trace.map((e) => e.outcome)).toEqual(['injected', 'ok', 'error']);
  });

  it('delays sync-family calls when asked', async () => {
    const { faulty } = await setup();
    const slow = new FaultyFs(memfsFileSystem(), { slowSyncMs: 30 });
    await slow.fs.mkdir('/x');
    const t0 = performance.now();
    await slow.fs.syncDir('/x');
    // A lower bound only: timers never fire early, whatever the load on the machine.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(25);
    expect(faulty.injected).toBe(0);
  });
});
