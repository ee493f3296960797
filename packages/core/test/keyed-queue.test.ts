// KeyedQueue: per-key serialization inside one instance, and drain.
import { describe, expect, it } from 'vitest';
import { KeyedQueue } from '../src/index.js';
import { deferred } from './store-wrappers.js';

describe('KeyedQueue', () => {
  it('runs calls with one key one after another, in order', async () => {
    const queue = new KeyedQueue();
    const log: string[] = [];
    const gate = deferred();
    const first = queue.run('a', async () => {
      log.push('first start');
      await gate.promise;
      log.push('first end');
      return 1;
    });
    const second = queue.run('a', async () => {
      log.push('second');
      return 2;
    });
    await Promise.resolve();
    await Promise.resolve();
    expect(log).toEqual(['first start']);
    gate.resolve();
    expect(await Promise.all([first, second])).toEqual([1, 2]);
    expect(log).toEqual(['first start', 'first end', 'second']);
  });

  it('runs calls with different keys concurrently', async () => {
    const queue = new KeyedQueue();
    const gate = deferred();
    const blocked = queue.run('a', () => gate.promise);
    await expect(queue.run('b', async () => 'b')).resolves.toBe('b');
    gate.resolve();
    await blocked;
  });

  it('a failing call rejects its caller and does not stop the next one', async () => {
    const queue = new KeyedQueue();
    const failing = queue.run('a', async () => {
      throw new Error('boom');
    });
    const next = queue.run('a', async () => 'next');
    await expect(failing).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next');
  });

  it('busy is true while work for the key is queued or running, then false', async () => {
    const queue = new KeyedQueue();
    const gate = deferred();
    const running = queue.run('a', () => gate.promise);
    expect(queue.busy('a')).toBe(true);
    expect(queue.busy('b')).toBe(false);
    gate.resolve();
    await running;
    await Promise.resolve();
    expect(queue.busy('a')).toBe(false);
  });

  it('drain waits for work queued while draining, and does not reject on failures', async () => {
    const queue = new KeyedQueue();
    const log: string[] = [];
    const gate = deferred();
    queue.run('a', () => gate.promise).catch(() => {});
    const drained = queue.drain().then(() => log.push('drained'));
    // Queued after drain started: on the same key and on a new one.
    queue
      .run('a', async () => {
        log.push('a again');
        throw new Error('ignored by drain');
      })
      .catch(() => {});
    const late = deferred();
    queue.run('b', () => late.promise.then(() => log.push('b'))).catch(() => {});
    gate.resolve();
    await Promise.resolve();
    await new Promise((resolve) => setTimeout(resolve, 1));
    expect(log).toEqual(['a again']);
    late.resolve();
    await drained;
    expect(log).toEqual(['a again', 'b', 'drained']);
    expect(queue.busy('a') || queue.busy('b')).toBe(false);
  });
});
