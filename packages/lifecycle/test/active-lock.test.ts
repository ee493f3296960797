// Active pointers are read-modify-write of one file; these tests show that concurrent writers,
// in this process and in others, cannot lose each other's pointers.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isTidemarkError } from '@tidemark/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACTIVE_FILE, ActivePointers, parseActiveFile } from '../src/index.js';

const id = (i: number) => `s-${String(i).padStart(3, '0')}`;
const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tidemark-active-lock-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

/**
 * Retries a change that met the lock held for longer than its wait (CONFLICT, retryable), as a
 * caller does: on a loaded machine 24 writers that each fsync can outlast one call's ~2 s wait.
 * What these tests guard is that no writer's change is lost, whatever the waits.
 */
async function retryingConflict(change: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await change();
      return;
    } catch (error) {
      if (!isTidemarkError(error, 'CONFLICT') || attempt === 20) throw error;
    }
  }
}

/** A child process that sets `count` pointers `/p/<name>-<i>` one after the other. */
function childSetting(name: string, count: number): Promise<{ code: number | null; stderr: string }> {
  const script = `
    const { ActivePointers } = await import(${JSON.stringify(dist)});
    const pointers = new ActivePointers(${JSON.stringify(home)});
    for (let i = 0; i < ${count}; i++) await pointers.set('/p/${name}-' + i, 's-' + String(i).padStart(3, '0'));
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('active pointers under concurrent writers', () => {
  it('keeps every pointer when many instances set different projects at once', async () => {
    const count = 24;
    // Separate instances share nothing in memory: only the file and its lock.
    await Promise.all(
      Array.from({ length: count }, (_, i) =>
        retryingConflict(() => new ActivePointers(home).set(`/p/${i}`, id(i))),
      ),
    );
    const all = await new ActivePointers(home).all();
    expect(Object.keys(all)).toHaveLength(count);
    for (let i = 0; i < count; i++) expect(all[`/p/${i}`]).toBe(id(i));
    expect(existsSync(join(home, `${ACTIVE_FILE}.lock`))).toBe(false); // released
  });

  it('keeps every pointer when set and clear race', async () => {
    const pointers = new ActivePointers(home);
    for (let i = 0; i < 10; i++) await pointers.set(`/old/${i}`, id(i));
    await Promise.all([
      ...Array.from({ length: 10 }, (_, i) =>
        retryingConflict(() => new ActivePointers(home).clear(`/old/${i}`)),
      ),
      ...Array.from({ length: 10 }, (_, i) =>
        retryingConflict(() => new ActivePointers(home).set(`/new/${i}`, id(i))),
      ),
    ]);
    const all = await pointers.all();
    expect(Object.keys(all).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `/new/${i}`).sort());
  });

  it.skipIf(!existsSync(dist))('keeps every pointer when two processes set them at once', async () => {
    const count = 15;
    const results = await Promise.all([childSetting('a', count), childSetting('b', count)]);
    for (const result of results) expect(result, result.stderr).toMatchObject({ code: 0 });
    const all = parseActiveFile(await readFile(join(home, ACTIVE_FILE), 'utf8'));
    expect(Object.keys(all)).toHaveLength(2 * count);
    for (const name of ['a', 'b']) for (let i = 0; i < count; i++) expect(all[`/p/${name}-${i}`]).toBe(id(i));
  });

  it('a lock held by a live process makes a change CONFLICT (retryable) and changes nothing', async () => {
    const pointers = new ActivePointers(home);
    await pointers.set('/p/x', id(1));
    await mkdir(join(home, `${ACTIVE_FILE}.lock`)); // fresh: its holder is alive and working
    const error = await pointers.set('/p/y', id(2)).catch((e: unknown) => e);
    expect(isTidemarkError(error, 'CONFLICT')).toBe(true);
    expect((error as { retryable: boolean }).retryable).toBe(true);
    expect((error as Error).message).toContain(ACTIVE_FILE);
    expect(await pointers.all()).toEqual({ '/p/x': id(1) });
  });

  it('a lock left by a killed holder (no heartbeat for longer than 10 s) is taken over', async () => {
    const pointers = new ActivePointers(home);
    const lock = join(home, `${ACTIVE_FILE}.lock`);
    await mkdir(lock);
    const old = new Date(Date.now() - 60_000);
    await utimes(lock, old, old);
    await pointers.set('/p/y', id(2));
    expect(await pointers.all()).toEqual({ '/p/y': id(2) });
    expect(existsSync(lock)).toBe(false);
  });
});

describe('clearing a pointer that moved on', () => {
  it('clear(cwd, id) leaves a pointer that names another session by now', async () => {
    const pointers = new ActivePointers(home);
    await pointers.set('/p', id(1));
    // Another agent made id(2) active in /p after the delete of id(1) read the pointers.
    await new ActivePointers(home).set('/p', id(2));
    expect(await pointers.clear('/p', id(1))).toBeUndefined();
    expect(await pointers.get('/p')).toBe(id(2));
    expect(await pointers.clear('/p', id(2))).toBe(id(2));
    expect(await pointers.get('/p')).toBeUndefined();
  });
});
