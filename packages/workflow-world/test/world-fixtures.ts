// Event requests as the runtime sends them, and a queue that records instead of delivering, for
// the tests that drive the World's Storage and Streamer directly.
import type { SessionStore } from '@tidemark/core';
import type { AnyEventRequest, QueuePayload, World } from '@workflow/world';
import { SPEC_VERSION_CURRENT } from '@workflow/world';
import { monotonicUlid } from '../src/ids.js';
import { createTidemarkWorld, type QueueSource } from '../src/index.js';

export const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
export const newRunId = (): string => `wrun_${monotonicUlid()}`;
const v = SPEC_VERSION_CURRENT;

export const req = {
  runCreated: (name = 'wf'): AnyEventRequest => ({
    eventType: 'run_created',
    specVersion: v,
    eventData: { deploymentId: 'dpl_test', workflowName: name, input: bytes('in') },
  }),
  runStarted: (): AnyEventRequest => ({ eventType: 'run_started', specVersion: v }),
  runCompleted: (): AnyEventRequest => ({
    eventType: 'run_completed',
    specVersion: v,
    eventData: { output: bytes('out') },
  }),
  stepCreated: (id: string): AnyEventRequest => ({
    eventType: 'step_created',
    specVersion: v,
    correlationId: id,
    eventData: { stepName: 'add', input: bytes(`${id}-in`) },
  }),
  stepStarted: (id: string): AnyEventRequest => ({
    eventType: 'step_started',
    specVersion: v,
    correlationId: id,
  }),
  stepCompleted: (id: string): AnyEventRequest => ({
    eventType: 'step_completed',
    specVersion: v,
    correlationId: id,
    eventData: { result: bytes(`${id}-out`) },
  }),
  hookCreated: (id: string, token: string): AnyEventRequest => ({
    eventType: 'hook_created',
    specVersion: v,
    correlationId: id,
    eventData: { token, metadata: bytes('meta') },
  }),
  hookReceived: (id: string): AnyEventRequest => ({
    eventType: 'hook_received',
    specVersion: v,
    correlationId: id,
    eventData: { payload: bytes('payload') },
  }),
  hookDisposed: (id: string): AnyEventRequest => ({
    eventType: 'hook_disposed',
    specVersion: v,
    correlationId: id,
  }),
  waitCreated: (id: string): AnyEventRequest => ({
    eventType: 'wait_created',
    specVersion: v,
    correlationId: id,
    eventData: { resumeAt: new Date(Date.now() + 60_000) },
  }),
  waitCompleted: (id: string): AnyEventRequest => ({
    eventType: 'wait_completed',
    specVersion: v,
    correlationId: id,
  }),
};

/** A queue that keeps what it is given. */
export function recordingQueue(): QueueSource & { sent: QueuePayload[] } {
  const sent: QueuePayload[] = [];
  return {
    sent,
    queue: async (_name, message) => {
      sent.push(message);
      return { messageId: null };
    },
    createQueueHandler: () => async () => new Response(null, { status: 204 }),
    getDeploymentId: async () => 'dpl_test',
  };
}

export const worldOn = (store: SessionStore): World =>
  createTidemarkWorld({ store, queue: recordingQueue() });

/** `world.events.create` typed for any request (run_created's overload takes a null run id). */
export const create = (world: World, runId: string, request: AnyEventRequest) =>
  world.events.create(runId, request as Parameters<World['events']['create']>[1]);
