// Reservations of create() before the first append, when another instance publishes the same id.
import { type FileSystem, isTidemarkError, nodeFileSystem } from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { openJsonlStore } from '../src/index.js';
import { ev, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('a first append that finds another instance published the id after it looked', () => {
  // Guards: a first append refused with CONFLICT after losing the publish race keeps its reservation.
  it('keeps its reservation when its batch is refused with CONFLICT, as the memory model does', async () => {
    const root = tempDir();
    // b looks for the log (none yet), then waits at its first look at the root while a publishes
    // the session and finishes; b's link then finds a's log, and its batch goes through the seq
    // rules: CONFLICT (another batch at seq 0).
    let unblock!: () => void;
    const gate = new Promise<void>((resolve) => {
      unblock = resolve;
    });
    let gated = false;
    const fs: FileSystem = {
      ...nodeFileSystem,
      async lstat(path) {
        if (path === root && !gated) {
          gated = true;
          await gate;
        }
        return nodeFileSystem.lstat(path);
      },
    };
    const a = await openJsonlStore({ root });
    const b = await openJsonlStore({ root, fs });
    await a.create({ id: 's', title: 'a' });
    await b.create({ id: 's', title: 'b' });
    const refused = b.append('s', [ev(0, 'note', { writer: 'b' })]).then(
      () => 'ok',
      (error: unknown) => (isTidemarkError(error) ? error.code : String(error)),
    );
    while (!gated) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(await a.append('s', [ev(0, 'note', { writer: 'a' })])).toEqual({ nextSeq: 1 });
    unblock();
    expect(await refused).toBe('CONFLICT');
    // The refused append changed nothing: b still holds its reservation after a deletes the session.
    await a.delete('s');
    await expect(b.create({ id: 's' })).rejects.toMatchObject({ code: 'ALREADY_EXISTS' });
    expect(await b.append('s', [ev(0, 'note', { writer: 'b' })])).toEqual({ nextSeq: 1 });
    expect((await a.load('s')).summary.title).toBe('b');
    await a.close();
    await b.close();
  });
});

describe('a delete that fails after removing the log', () => {
  // Guards: the reservation ends only when delete succeeds (core's rule): a directory sync failing
  // after the unlink is a refused delete, and this instance's first batch still creates the session.
  it('keeps the reservation of the deleting instance when the directory sync after the unlink fails', async () => {
    const root = tempDir();
    // Armed: the first directory sync after a log was unlinked fails.
    let armed = false;
    let failSync = false;
    const fs: FileSystem = {
      ...nodeFileSystem,
      async unlink(path) {
        await nodeFileSystem.unlink(path);
        if (armed && path.endsWith('.jsonl')) failSync = true;
      },
      async syncDir(path) {
        if (failSync) {
          failSync = armed = false;
          throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
        }
        return nodeFileSystem.syncDir(path);
      },
    };
    const a = await openJsonlStore({ root, fs });
    const b = await openJsonlStore({ root });
    await a.create({ id: 's', title: 'a' });
    await b.create({ id: 's', title: 'b' });
    expect(await b.append('s', [ev(0, 'turn/end')])).toEqual({ nextSeq: 1 });
    armed = true;
    await expect(a.delete('s')).rejects.toMatchObject({ code: 'IO' });
    expect(await a.has('s')).toBe(false);
    await expect(a.create({ id: 's' })).rejects.toMatchObject({ code: 'ALREADY_EXISTS' });
    expect(await a.append('s', [ev(0, 'note')])).toEqual({ nextSeq: 1 });
    expect((await b.load('s')).summary.title).toBe('a');
    await a.close();
    await b.close();
  });
});
