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
