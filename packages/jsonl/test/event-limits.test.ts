// Event size limits: nothing acknowledged is longer than the log reader accepts.
import {
  DEFAULT_MAX_EVENT_BYTES,
  isTidemarkError,
  MAX_ATTRS_BYTES,
  MAX_TAGS,
  MAX_TEXT_LENGTH,
} from '@tidemark/core';
import { afterEach, describe, expect, it } from 'vitest';
import { openJsonlStore } from '../src/index.js';
import { ev, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('line length: nothing acknowledged is longer than the reader accepts', () => {
  // Guards: maxEventBytes above what the log reader accepts is refused at open.
  it('a maxEventBytes above what a log line may hold is INVALID at open', async () => {
    const root = tempDir();
    for (const bad of [DEFAULT_MAX_EVENT_BYTES + 1, 64 * 1024 * 1024, 0, 1.5]) {
      const error = await openJsonlStore({ root, maxEventBytes: bad }).catch((e: unknown) => e);
      expect(isTidemarkError(error, 'INVALID'), String(bad)).toBe(true);
      expect((error as Error).message).toContain('maxEventBytes');
    }
  });

  // Guards: the largest accepted event and summary fields fit one log line and read back after reopen.
  it('the largest event and the largest pending summary fields read back after reopen', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 'big' });
    // Summary fields at their limits, written into the header line of the first batch; control
    // characters take six bytes each as JSON escapes.
    const patch = {
      title: '\u0001'.repeat(MAX_TEXT_LENGTH),
      tags: Array.from({ length: MAX_TAGS }, () => '\u0001'.repeat(MAX_TEXT_LENGTH)),
      attrs: { blob: 'x'.repeat(MAX_ATTRS_BYTES - '{"blob":""}'.length) },
    };
    await store.update('big', patch);
    const data = 'y'.repeat(DEFAULT_MAX_EVENT_BYTES - JSON.stringify(ev(0, 'turn/end', '')).length);
    const event = ev(0, 'turn/end', data);
    expect(Buffer.byteLength(JSON.stringify(event))).toBe(DEFAULT_MAX_EVENT_BYTES);
    await store.append('big', [event]);
    await store.close();
    const reopened = await openJsonlStore({ root });
    const loaded = await reopened.load('big');
    expect(loaded.events).toHaveLength(1);
    expect(loaded.events[0]!.data).toBe(data);
    expect(loaded.summary.tags).toEqual(patch.tags);
    expect(loaded.summary.attrs).toEqual(patch.attrs);
    expect(await reopened.append('big', [ev(1, 'turn/end', 'next')])).toEqual({ nextSeq: 2 });
    await reopened.close();
  }, 60_000);
});
