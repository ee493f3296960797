// A run is one tidemark session whose events are the run's World events in seq order. The run,
// its steps, hooks and waits are folded from that log and nothing else, so every entity a reader
// sees is exactly what the acknowledged events say, in every process.
import type { Event, Hook, Step, Wait, WorkflowRun } from '@workflow/world';
import { applyAttributeChanges } from '@workflow/world';

/** The folded state of one run's log. */
export interface RunView {
  runId: string;
  /** Undefined until a run_created is in the log. */
  run: WorkflowRun | undefined;
  steps: Map<string, Step>;
  /** Live hooks (created and neither disposed nor released by the run's end). */
  hooks: Map<string, Hook>;
  /** Hook ids disposed explicitly or by the run's end. */
  disposedHooks: Set<string>;
  waits: Map<string, Wait>;
  /** Every event of the log, in seq order (index = seq). */
  events: Event[];
}

/** The seq the next event of this run is appended at. */
export const nextSeqOf = (view: RunView): number => view.events.length;

/** The view of a run with no events. */
export function emptyView(runId: string): RunView {
  return {
    runId,
    run: undefined,
    steps: new Map(),
    hooks: new Map(),
    disposedHooks: new Set(),
    waits: new Map(),
    events: [],
  };
}

/** The eventData of an event as a plain record (every event type's data is an object or absent). */
export function dataOf(event: { eventData?: unknown }): Record<string, unknown> {
  const data = event.eventData;
  return data !== null && typeof data === 'object' ? (data as Record<string, unknown>) : {};
}

function endRun(view: RunView, run: WorkflowRun): void {
  view.run = run;
  for (const hookId of view.hooks.keys()) view.disposedHooks.add(hookId);
  view.hooks.clear();
  view.waits.clear();
}

function foldRun(view: RunView, event: Event, at: Date): void {
  const data = dataOf(event);
  const run = view.run;
  switch (event.eventType) {
    case 'run_created':
      view.run = {
        runId: view.runId,
        deploymentId: data.deploymentId,
        status: 'pending',
        workflowName: data.workflowName,
        specVersion: event.specVersion,
        executionContext: data.executionContext,
        input: data.input,
        output: undefined,
        error: undefined,
        startedAt: undefined,
        completedAt: undefined,
        attributes: (data.attributes as Record<string, string> | undefined) ?? {},
        createdAt: at,
        updatedAt: at,
      } as WorkflowRun;
      return;
    case 'run_started':
      if (run !== undefined && run.status !== 'running')
        view.run = {
          ...run,
          status: 'running',
          startedAt: run.startedAt ?? at,
          updatedAt: at,
        } as WorkflowRun;
      return;
    case 'run_completed':
      if (run !== undefined)
        endRun(view, {
          ...run,
          status: 'completed',
          output: data.output,
          completedAt: at,
          updatedAt: at,
        } as WorkflowRun);
      return;
    case 'run_failed':
      if (run !== undefined)
        endRun(view, {
          ...run,
          status: 'failed',
          output: undefined,
          error: data.error,
          errorCode: data.errorCode,
          completedAt: at,
          updatedAt: at,
        } as WorkflowRun);
      return;
    case 'run_cancelled':
      if (run !== undefined && run.status !== 'cancelled')
        endRun(view, { ...run, status: 'cancelled', completedAt: at, updatedAt: at } as WorkflowRun);
      return;
    case 'attr_set':
      if (run !== undefined) {
        const changes = data.changes as Parameters<typeof applyAttributeChanges>[1];
        view.run = { ...run, attributes: applyAttributeChanges(run.attributes, changes), updatedAt: at };
      }
      return;
  }
}

function foldStep(view: RunView, event: Event, at: Date): void {
  const id = event.correlationId as string;
  const data = dataOf(event);
  const step = view.steps.get(id);
  if (event.eventType === 'step_created') {
    view.steps.set(id, {
      runId: view.runId,
      stepId: id,
      stepName: data.stepName,
      status: 'pending',
      input: data.input,
      output: undefined,
      error: undefined,
      attempt: 0,
      startedAt: undefined,
      completedAt: undefined,
      createdAt: at,
      updatedAt: at,
      specVersion: event.specVersion,
    } as Step);
    return;
  }
  if (step === undefined) return;
  switch (event.eventType) {
    case 'step_started':
      view.steps.set(id, {
        ...step,
        status: 'running',
        startedAt: step.startedAt ?? at,
        attempt: step.attempt + 1,
        retryAfter: undefined,
        updatedAt: at,
      });
      return;
    case 'step_completed':
      view.steps.set(id, {
        ...step,
        status: 'completed',
        output: data.result,
        completedAt: at,
        updatedAt: at,
      } as Step);
      return;
    case 'step_failed':
      view.steps.set(id, {
        ...step,
        status: 'failed',
        error: data.error,
        completedAt: at,
        updatedAt: at,
      } as Step);
      return;
    case 'step_retrying':
      view.steps.set(id, {
        ...step,
        status: 'pending',
        error: data.error,
        retryAfter: data.retryAfter as Date | undefined,
        updatedAt: at,
      } as Step);
      return;
  }
}

function foldHookOrWait(view: RunView, event: Event, at: Date): void {
  const id = event.correlationId as string;
  const data = dataOf(event);
  switch (event.eventType) {
    case 'hook_created':
      view.hooks.set(id, {
        runId: view.runId,
        hookId: id,
        token: data.token,
        metadata: data.metadata,
        ownerId: 'tidemark',
        projectId: 'tidemark',
        environment: 'tidemark',
        createdAt: at,
        specVersion: event.specVersion,
        isWebhook: (data.isWebhook as boolean | undefined) ?? false,
        isSystem: (data.isSystem as boolean | undefined) ?? false,
      } as Hook);
      return;
    case 'hook_disposed':
      view.hooks.delete(id);
      view.disposedHooks.add(id);
      return;
    case 'wait_created':
      view.waits.set(id, {
        waitId: `${view.runId}-${id}`,
        runId: view.runId,
        status: 'waiting',
        resumeAt: data.resumeAt as Date | undefined,
        completedAt: undefined,
        createdAt: at,
        updatedAt: at,
        specVersion: event.specVersion,
      });
      return;
    case 'wait_completed': {
      const wait = view.waits.get(id);
      if (wait !== undefined)
        view.waits.set(id, { ...wait, status: 'completed', completedAt: at, updatedAt: at });
      return;
    }
  }
}

/** Folds one stored event into the view (the event at seq `view.events.length`). */
export function applyEvent(view: RunView, event: Event): void {
  view.events.push(event);
  const at = event.createdAt;
  if (event.eventType.startsWith('run_') || event.eventType === 'attr_set') foldRun(view, event, at);
  else if (event.eventType.startsWith('step_')) foldStep(view, event, at);
  else foldHookOrWait(view, event, at);
}
