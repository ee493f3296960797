import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isTidemarkError, prepareBatch } from '@tidemark/core';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, encodeBatch, encodeHeader, openJsonlStore, sessionPaths } from '../src/index.js';
import { removeTempDirs, tempDir } from './helpers.js';
import { headerLine, logOf } from './logs.js';

afterEach(removeTempDirs);

const TYPED_READ_CODES = ['CORRUPT', 'UNSUPPORTED_FORMAT'];

describe('hostile bytes', () => {
  it('arbitrary bytes as a log or a summary: typed errors or a repaired tail, never absence or a prototype change', async () => {
    const valid = logOf([[{ seq: 0, type: 'turn/end', time: '2026-01-01T00:00:00.000Z', data: 1 }]]);
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 600 }),
        fc.constantFrom('none', 'header', 'valid'),
        fc.option(
          fc.oneof(
            fc.uint8Array({ maxLength: 300 }),
            fc.json().map((j) => Buffer.from(j)),
          ),
        ),
        async (bytes, prefix, summary) => {
          const root = tempDir();
          const paths = sessionPaths(root, bucketOf(undefined), 's');
          mkdirSync(paths.dir, { recursive: true });
          const head =
            prefix === 'none' ? Buffer.alloc(0) : prefix === 'header' ? Buffer.from(headerLine()) : valid;
          writeFileSync(paths.log, Buffer.concat([head, bytes]));
          if (summary !== null) writeFileSync(paths.summary, summary);
          const store = await openJsonlStore({ root });
          expect(await store.has('s')).toBe(true);
          const page = await store.list();
          expect(page.sessions.length + page.problems.length).toBe(1);
          for (const problem of page.problems) expect(isTidemarkError(problem.error)).toBe(true);
          const loaded = await store.load('s').catch((e: unknown) => e);
          if (isTidemarkError(loaded)) expect(TYPED_READ_CODES).toContain(loaded.code);
          else expect(loaded).toHaveProperty('events');
          const appended = await store
            .append('s', [{ seq: 0, type: 'note', time: '2026-01-01T00:00:00.000Z', data: null }])
            .catch((e: unknown) => e);
          if (appended instanceof Error) expect(isTidemarkError(appended)).toBe(true);
          await store.close();
          expect(Object.getPrototypeOf({})).toBe(Object.prototype);
          expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('bounded memory', () => {
  it('read() streams a log far larger than the heap it is given', async () => {
    const root = tempDir();
    const paths = sessionPaths(root, bucketOf(undefined), 'big');
    mkdirSync(paths.dir, { recursive: true });
    const fd = openSync(paths.log, 'w');
    writeSync(fd, encodeHeader({ id: 'big', createdAt: '2026-01-01T00:00:00.000Z' }, {}));
    const payload = 'x'.repeat(900);
    const events = 64 * 1024; // ~64 MiB of log
    for (let seq = 0; seq < events; seq += 256) {
      const batch = prepareBatch(
        Array.from({ length: 256 }, (_, i) => ({
          seq: seq + i,
          type: 'note',
          time: '2026-01-01T00:00:00.000Z',
          data: { payload },
        })),
      );
      writeSync(fd, encodeBatch(batch, seq + 255, '2026-01-01T00:00:01.000Z'));
    }
    closeSync(fd);
    const child = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'child.mjs');
    const output = await new Promise<string>((resolve, reject) => {
      // 32 MiB of old space: the events of this log as objects would need several times more.
      const proc = spawn(process.execPath, [
        '--max-old-space-size=32',
        child,
        JSON.stringify({ mode: 'stream', root, id: 'big' }),
      ]);
      let text = '';
      proc.stdout.on('data', (chunk) => {
        text += chunk;
      });
      proc.stderr.on('data', (chunk) => {
        text += chunk;
      });
      proc.on('exit', (code) =>
        code === 0
          ? resolve(text)
          : reject(new Error(`stream child failed (${code}): ${text.slice(0, 500)}`)),
      );
    });
    expect(JSON.parse(output.trim().split('\n').pop()!)).toMatchObject({ count: events });
  });
});
