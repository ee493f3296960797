/**
 * A Vercel Workflow DevKit World on tidemark: `Storage` and `Streamer` over any tidemark
 * `SessionStore`, composed with another World's `Queue`.
 *
 * @packageDocumentation
 */
export { decodeValue, encodeValue } from './codec.js';
export { tokenSessionId } from './hook-tokens.js';
export { createStorage, type Layout, layoutOf, type TidemarkStorage } from './storage.js';
export { createStreamer, type StreamerOptions, streamSessionId } from './streamer.js';
export { borrowQueue, createTidemarkWorld, type QueueSource, type TidemarkWorldOptions } from './world.js';
