// The World: tidemark's Storage and Streamer, and a Queue borrowed from another World. The World
// interface is Queue & Streamer & Storage with flat members, so a queue is borrowed by taking
// another World's three Queue members (`queue`, `createQueueHandler`, `getDeploymentId`); its
// storage is never touched. A queue in memory (world-local's) loses its messages with the process,
// so `start()` enqueues every run that is not finished again from tidemark's logs, as
// world-local's own start does from its files: the runtime replays each from its log.
import type { SessionStore } from '@tidemark/core';
import type { Queue, World } from '@workflow/world';
import { reenqueueActiveRuns, SPEC_VERSION_CURRENT } from '@workflow/world';
import { createStorage, layoutOf } from './storage.js';
import { createStreamer, type StreamerOptions } from './streamer.js';

/** A World, or anything else with the Queue members, whose queue the tidemark World uses. */
export type QueueSource = Queue & { close?(): Promise<void> };

/** Options of {@link createTidemarkWorld}. */
export interface TidemarkWorldOptions extends StreamerOptions {
  /** The store every run, hook token and stream of this World is kept in. */
  store: SessionStore;
  /** Where messages go: another World (e.g. `createWorld()` of `@workflow/world-local`) or a Queue. */
  queue: QueueSource;
  /**
   * Separates Worlds sharing one store (default `default`): each lists only its own runs. Sessions
   * are listed under the `cwd` `workflow:<namespace>/…`.
   */
  namespace?: string;
  /** Enqueue the runs that are not finished again in `start()` (default true). */
  recoverActiveRuns?: boolean;
  /** Close the store in `close()` (default false: the caller opened it). */
  closeStore?: boolean;
}

/** Takes the Queue members of another World, leaving its Storage and Streamer alone. */
export function borrowQueue(source: QueueSource): Queue {
  return {
    queue: source.queue.bind(source),
    createQueueHandler: source.createQueueHandler.bind(source),
    getDeploymentId: source.getDeploymentId.bind(source),
  };
}

/** A Workflow DevKit World whose Storage and Streamer are tidemark over `options.store`. */
export function createTidemarkWorld(options: TidemarkWorldOptions): World {
  const layout = layoutOf(options.namespace ?? 'default');
  const storage = createStorage(options.store, layout);
  const queue = borrowQueue(options.queue);
  const { runIds: _runIds, ...worldStorage } = storage;
  return {
    specVersion: SPEC_VERSION_CURRENT,
    ...queue,
    ...worldStorage,
    streams: createStreamer(options.store, layout, options),
    async start() {
      if (options.recoverActiveRuns === false) return;
      await reenqueueActiveRuns(storage.runs, queue.queue, 'tidemark');
    },
    async close() {
      await options.queue.close?.();
      if (options.closeStore === true) await options.store.close();
    },
  };
}
