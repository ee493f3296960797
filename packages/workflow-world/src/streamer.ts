// Streams as append-only logs: one tidemark session per stream (`wstr_` + the name's hash), a
// chunk per event (its seq is the chunk's index) and a close event last. A reader follows the log
// from an index: what is stored is handed out in order, then it waits for more (woken at once by
// a write in this process, by polling for another process's) until the close event.
import { createHash } from 'node:crypto';
import { isTidemarkError, type SessionEvent, type SessionStore, TidemarkError } from '@tidemark/core';
import type { GetChunksOptions, StreamChunksResponse, Streamer, StreamInfoResponse } from '@workflow/world';
import { backoff, MAX_REPLANS, reserve } from './run-log.js';
import type { Layout } from './storage.js';

const CHUNK = 'workflow/chunk';
const CLOSE = 'workflow/stream-close';

/** The id of a stream's session: `wstr_` and 48 hex digits of the stream name's SHA-256. */
export const streamSessionId = (name: string): string =>
  `wstr_${createHash('sha256').update(name).digest('hex').slice(0, 48)}`;

const bytesOf = (chunk: string | Uint8Array): Uint8Array =>
  typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk;

function chunkOf(id: string, event: SessionEvent): Uint8Array | undefined {
  if (event.type === CLOSE) return undefined;
  const data = event.data as { b?: unknown } | null;
  if (event.type !== CHUNK || typeof data?.b !== 'string')
    throw new TidemarkError('CORRUPT', `stream log ${id}: seq ${event.seq} is not a chunk`, {
      sessionId: id,
    });
  return new Uint8Array(Buffer.from(data.b, 'base64'));
}

/** Options of {@link createStreamer}. */
export interface StreamerOptions {
  /** How often a reader waiting for more looks at the store for another process's writes (ms). */
  pollMs?: number;
}

type Chunk = { index: number; data: Uint8Array };

/** The stream logs of one World, and the readers waiting on them in this process. */
class StreamLogs {
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly store: SessionStore,
    private readonly layout: Layout,
    private readonly pollMs: number,
  ) {}

  private wake(id: string): void {
    for (const resolve of this.waiters.get(id) ?? []) resolve();
  }

  /** Resolves on the next write to the stream in this process, or after `pollMs`. */
  private waitForMore(id: string): Promise<void> {
    return new Promise<void>((resolve) => {
      const set = this.waiters.get(id) ?? new Set();
      this.waiters.set(id, set);
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        resolve();
      };
      const timer = setTimeout(done, this.pollMs);
      set.add(done);
    });
  }

  async tail(id: string): Promise<{ nextSeq: number; closed: boolean }> {
    try {
      for await (const event of this.store.read(id, { last: 1 }))
        return { nextSeq: event.seq + 1, closed: event.type === CLOSE };
    } catch (error) {
      if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
    }
    return { nextSeq: 0, closed: false };
  }

  async append(runId: string, name: string, events: (seq: number) => SessionEvent[]): Promise<void> {
    const id = streamSessionId(name);
    for (let attempt = 0; attempt < MAX_REPLANS; attempt++) {
      await backoff(attempt);
      const { nextSeq, closed } = await this.tail(id);
      if (closed)
        throw new TidemarkError('INVALID', `stream ${name} is closed: nothing more can be written to it`);
      if (nextSeq === 0) await reserve(this.store, id, this.layout.streams(runId), name);
      try {
        await this.store.append(id, events(nextSeq));
        this.wake(id);
        return;
      } catch (error) {
        if (!isTidemarkError(error, 'CONFLICT')) throw error;
      }
    }
    throw new TidemarkError('CONFLICT', `stream ${name}: lost the next seq ${MAX_REPLANS} times`, {
      sessionId: id,
    });
  }

  async close(runId: string, name: string): Promise<void> {
    if ((await this.tail(streamSessionId(name))).closed) return; // closing twice is closing once
    await this.append(runId, name, (seq) => [
      { seq, type: CLOSE, time: new Date().toISOString(), data: null },
    ]);
  }

  async readFrom(id: string, fromSeq: number, limit?: number): Promise<{ chunks: Chunk[]; closed: boolean }> {
    const chunks: Chunk[] = [];
    let closed = false;
    try {
      for await (const event of this.store.read(id, { fromSeq })) {
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

  async get(name: string, startIndex: number): Promise<ReadableStream<Uint8Array>> {
    const id = streamSessionId(name);
    let next = startIndex;
    if (next < 0) {
      const { nextSeq, closed } = await this.tail(id);
      next = Math.max(0, (closed ? nextSeq - 1 : nextSeq) + next);
    }
    let cancelled = false;
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        while (!cancelled) {
          const { chunks, closed } = await this.readFrom(id, next);
          for (const chunk of chunks) controller.enqueue(chunk.data);
          next += chunks.length;
          if (closed) {
            controller.close();
            return;
          }
          if (chunks.length > 0) return;
          await this.waitForMore(id);
        }
      },
      cancel: () => {
        cancelled = true;
      },
    });
  }

  async list(runId: string): Promise<string[]> {
    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const found = await this.store.list({
        cwd: this.layout.streams(runId),
        limit: 1000,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      const problem = found.problems[0];
      if (problem !== undefined) throw problem.error;
      for (const session of found.sessions) if (session.title !== undefined) names.push(session.title);
      cursor = found.nextCursor;
    } while (cursor !== undefined);
    return names.sort();
  }

  async getChunks(name: string, options?: GetChunksOptions): Promise<StreamChunksResponse> {
    const limit = Math.min(Math.max(1, options?.limit ?? 100), 1000);
    let start = 0;
    if (options?.cursor !== undefined) {
      const decoded = JSON.parse(Buffer.from(options.cursor, 'base64').toString('utf8')) as { i?: unknown };
      if (typeof decoded.i !== 'number')
        throw new TidemarkError('INVALID', `getChunks: cursor ${options.cursor} is not one of this stream's`);
      start = decoded.i;
    }
    const { chunks, closed } = await this.readFrom(streamSessionId(name), start, limit);
    const hasMore = chunks.length > limit;
    const data = chunks.slice(0, limit);
    const cursor = hasMore
      ? Buffer.from(JSON.stringify({ i: start + data.length })).toString('base64')
      : null;
    return { data, cursor, hasMore, done: closed && !hasMore };
  }

  async getInfo(name: string): Promise<StreamInfoResponse> {
    const { nextSeq, closed } = await this.tail(streamSessionId(name));
    return { tailIndex: (closed ? nextSeq - 1 : nextSeq) - 1, done: closed };
  }
}

const chunkEvents = (chunks: (string | Uint8Array)[]) => (seq: number) =>
  chunks.map((chunk, i) => ({
    seq: seq + i,
    type: CHUNK,
    time: new Date().toISOString(),
    data: { b: Buffer.from(bytesOf(chunk)).toString('base64') },
  }));

/** The World's Streamer over `store`: each stream a log, listed under its run's `cwd`. */
export function createStreamer(
  store: SessionStore,
  layout: Layout,
  options: StreamerOptions = {},
): Streamer['streams'] {
  const logs = new StreamLogs(store, layout, options.pollMs ?? 50);
  return {
    write: (runId, name, chunk) => logs.append(runId, name, chunkEvents([chunk])),
    writeMulti: (runId, name, chunks) =>
      chunks.length === 0 ? Promise.resolve() : logs.append(runId, name, chunkEvents(chunks)),
    close: (runId, name) => logs.close(runId, name),
    get: (_runId, name, startIndex = 0) => logs.get(name, startIndex),
    list: (runId) => logs.list(runId),
    getChunks: (_runId, name, options) => logs.getChunks(name, options),
    getInfo: (_runId, name) => logs.getInfo(name),
  };
}
