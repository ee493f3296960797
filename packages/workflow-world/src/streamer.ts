// Streams as append-only logs: one tidemark session per stream (`wstr_` + the name's hash), a
// chunk per event (its seq is the chunk's index) and a close event last. A reader follows the log
// from an index: what is stored is handed out in order, then it waits for more (woken at once by
// a write in this process, by polling for another process's) until the close event.
import { createHash } from 'node:crypto';
import { isTidemarkError, type SessionEvent, type SessionStore, TidemarkError } from '@tidemark/core';
import type { GetChunksOptions, StreamChunksResponse, StreamInfoResponse, Streamer } from '@workflow/world';
import { backoff, MAX_REPLANS, reserve } from './run-log.js';
import type { Layout } from './storage.js';

const CHUNK = 'workflow/chunk';
const CLOSE = 'workflow/stream-close';

export const streamSessionId = (name: string): string =>
  `wstr_${createHash('sha256').update(name).digest('hex').slice(0, 48)}`;

const bytesOf = (chunk: string | Uint8Array): Uint8Array =>
  typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk;

function chunkOf(id: string, event: SessionEvent): Uint8Array | undefined {
  if (event.type === CLOSE) return undefined;
  const data = event.data as { b?: unknown } | null;
  if (event.type !== CHUNK || typeof data?.b !== 'string')
    throw new TidemarkError('CORRUPT', `stream log ${id}: seq ${event.seq} is not a chunk`, { sessionId: id });
  return new Uint8Array(Buffer.from(data.b, 'base64'));
}

/** Options of {@link createStreamer}. */
export interface StreamerOptions {
  /** How often a reader waiting for more looks at the store for another process's writes (ms). */
  pollMs?: number;
}

export function createStreamer(store: SessionStore, layout: Layout, options: StreamerOptions = {}): Streamer['streams'] {
  const pollMs = options.pollMs ?? 50;
  const waiters = new Map<string, Set<() => void>>();
  const wake = (id: string) => {
    for (const resolve of waiters.get(id) ?? []) resolve();
  };
  const waitForMore = (id: string) =>
    new Promise<void>((resolve) => {
      const set = waiters.get(id) ?? new Set();
      waiters.set(id, set);
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        resolve();
      };
      const timer = setTimeout(done, pollMs);
      set.add(done);
    });

  async function tail(id: string): Promise<{ nextSeq: number; closed: boolean }> {
    try {
      for await (const event of store.read(id, { last: 1 })) return { nextSeq: event.seq + 1, closed: event.type === CLOSE };
    } catch (error) {
      if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
    }
    return { nextSeq: 0, closed: false };
  }

  async function appendAtEnd(runId: string, name: string, events: (seq: number) => SessionEvent[]): Promise<void> {
    const id = streamSessionId(name);
    for (let attempt = 0; attempt < MAX_REPLANS; attempt++) {
      await backoff(attempt);
      const { nextSeq, closed } = await tail(id);
      if (closed) throw new TidemarkError('INVALID', `stream ${name} is closed: nothing more can be written to it`);
      if (nextSeq === 0) await reserve(store, id, layout.streams(runId), name);
      try {
        await store.append(id, events(nextSeq));
        wake(id);
        return;
      } catch (error) {
        if (!isTidemarkError(error, 'CONFLICT')) throw error;
      }
    }
    throw new TidemarkError('CONFLICT', `stream ${name}: lost the next seq ${MAX_REPLANS} times`, { sessionId: id });
  }

  const chunkEvents = (chunks: (string | Uint8Array)[]) => (seq: number) =>
    chunks.map((chunk, i) => ({
      seq: seq + i,
      type: CHUNK,
      time: new Date().toISOString(),
      data: { b: Buffer.from(bytesOf(chunk)).toString('base64') },
    }));

  async function readFrom(id: string, fromSeq: number, limit?: number) {
    const chunks: { index: number; data: Uint8Array }[] = [];
    let closed = false;
    try {
      for await (const event of store.read(id, { fromSeq })) {
        const data = chunkOf(id, event);
        if (data === undefined) {
          closed = true;
          break;
        }
        chunks.push({ index: event.seq, data });
        if (limit !== undefined && chunks.length > limit) break;
      }
    } catch (error) {
      if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
    }
    return { chunks, closed };
  }

  return {
    write: (runId, name, chunk) => appendAtEnd(runId, name, chunkEvents([chunk])),
    writeMulti: (runId, name, chunks) => (chunks.length === 0 ? Promise.resolve() : appendAtEnd(runId, name, chunkEvents(chunks))),
    async close(runId, name) {
      const id = streamSessionId(name);
      if ((await tail(id)).closed) return; // closing twice is closing once
      await appendAtEnd(runId, name, (seq) => [{ seq, type: CLOSE, time: new Date().toISOString(), data: null }]);
    },
    async get(_runId, name, startIndex = 0) {
      const id = streamSessionId(name);
      let next = startIndex;
      if (next < 0) {
        const { nextSeq, closed } = await tail(id);
        next = Math.max(0, (closed ? nextSeq - 1 : nextSeq) + next);
      }
      let cancelled = false;
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          while (!cancelled) {
            const { chunks, closed } = await readFrom(id, next);
            for (const chunk of chunks) controller.enqueue(chunk.data);
            next += chunks.length;
            if (closed) {
              controller.close();
              return;
            }
            if (chunks.length > 0) return;
            await waitForMore(id);
          }
        },
        cancel() {
          cancelled = true;
        },
      });
    },
    async list(runId) {
      const names: string[] = [];
      let cursor: string | undefined;
      do {
        const found = await store.list({ cwd: layout.streams(runId), limit: 1000, ...(cursor !== undefined ? { cursor } : {}) });
        const problem = found.problems[0];
        if (problem !== undefined) throw problem.error;
        for (const session of found.sessions) if (session.title !== undefined) names.push(session.title);
        cursor = found.nextCursor;
      } while (cursor !== undefined);
      return names.sort();
    },
    async getChunks(_runId, name, options?: GetChunksOptions): Promise<StreamChunksResponse> {
      const id = streamSessionId(name);
      const limit = Math.min(Math.max(1, options?.limit ?? 100), 1000);
      let start = 0;
      if (options?.cursor !== undefined) {
        const decoded = JSON.parse(Buffer.from(options.cursor, 'base64').toString('utf8')) as { i?: unknown };
        if (typeof decoded.i !== 'number') throw new TidemarkError('INVALID', `getChunks: cursor ${options.cursor} is not one of this stream's`);
        start = decoded.i;
      }
      const { chunks, closed } = await readFrom(id, start, limit);
      const hasMore = chunks.length > limit;
      const data = chunks.slice(0, limit);
      const nextIndex = start + data.length;
      return {
        data,
        cursor: hasMore ? Buffer.from(JSON.stringify({ i: nextIndex })).toString('base64') : null,
        hasMore,
        done: closed && !hasMore,
      };
    },
    async getInfo(_runId, name): Promise<StreamInfoResponse> {
      const { nextSeq, closed } = await tail(streamSessionId(name));
      return { tailIndex: (closed ? nextSeq - 1 : nextSeq) - 1, done: closed };
    },
  };
}
