// What one `events.create` appends to a run's log, decided from the folded log alone (pure: the
// caller reads the log, plans, and appends at the log's next seq, so a plan made from a log that
// another process has since extended is refused by the store and made again). The rules are the
// World's, as @workflow/world-local applies them: terminal runs and steps refuse transitions,
// entities are created once, a running run's run_started writes nothing.
import {
  EntityConflictError,
  HookNotFoundError,
  RunExpiredError,
  RunNotSupportedError,
  TooEarlyError,
  WorkflowRunNotFoundError,
  WorkflowWorldError,
} from '@workflow/errors';
import type { AnyEventRequest, Event } from '@workflow/world';
import {
  isTerminalRunEventType,
  isTerminalStepStatus,
  isTerminalWorkflowRunStatus,
  requiresNewerWorld,
  SPEC_VERSION_CURRENT,
  validateAttributeChanges,
} from '@workflow/world';
import { dataOf, type RunView } from './view.js';

/** The outcome of planning: the events to append (in order), or nothing to write. */
export type Plan = { kind: 'append'; events: Event[]; stepCreated?: boolean } | { kind: 'none' };

/** What the planner needs besides the log. */
export interface PlanContext {
  now: Date;
  newEventId: () => string;
  /** For hook_created: the run holding the token, when another live hook holds it. */
  tokenHeldBy?: string;
}

type Request = AnyEventRequest;

function stamp(view: RunView, request: Request, ctx: PlanContext, eventId = ctx.newEventId()): Event {
  return {
    ...request,
    runId: view.runId,
    eventId,
    createdAt: ctx.now,
    specVersion: request.specVersion ?? SPEC_VERSION_CURRENT,
  } as Event;
}

function attributeEntries(data: Record<string, unknown>): { key: string; value: string }[] {
  const attributes = (data.attributes ?? {}) as Record<string, string>;
  return Object.entries(attributes).map(([key, value]) => ({ key, value }));
}

/** run_started on a run that is not stored, carrying the run's input: create the run first. */
function resilientStart(view: RunView, request: Request, ctx: PlanContext): Event | undefined {
  if (request.eventType !== 'run_started') return undefined;
  const data = dataOf(request);
  if (data.deploymentId === undefined || data.workflowName === undefined || data.input === undefined)
    return undefined;
  validateAttributeChanges(attributeEntries(data), {
    allowReservedAttributes: data.allowReservedAttributes === true,
  });
  return stamp(
    view,
    {
      eventType: 'run_created',
      specVersion: request.specVersion,
      eventData: {
        deploymentId: data.deploymentId,
        workflowName: data.workflowName,
        input: data.input,
        executionContext: data.executionContext,
        attributes: data.attributes,
        allowReservedAttributes: data.allowReservedAttributes,
      },
    } as Request,
    ctx,
  );
}

function checkTerminalRun(view: RunView, request: Request, lazyStart: boolean): Plan | undefined {
  const run = view.run;
  if (run === undefined || !isTerminalWorkflowRunStatus(run.status)) return undefined;
  const type = request.eventType;
  if (type === 'run_started')
    throw new RunExpiredError(`Workflow run "${view.runId}" is already in terminal state "${run.status}"`);
  if (type === 'run_cancelled' && run.status === 'cancelled') return undefined; // idempotent: recorded again
  if (isTerminalRunEventType(type))
    throw new EntityConflictError(`Cannot transition run from terminal state "${run.status}"`);
  if (type === 'step_created' || type === 'hook_created' || type === 'wait_created' || lazyStart)
    throw new EntityConflictError(`Cannot create new entities on run in terminal state "${run.status}"`);
  if (type === 'attr_set')
    throw new EntityConflictError(`Cannot set attributes on run in terminal state "${run.status}"`);
  return undefined;
}

function checkStep(view: RunView, request: Request, lazyStart: boolean, ctx: PlanContext): void {
  const id = request.correlationId as string;
  const step = view.steps.get(id);
  if (request.eventType === 'step_created') {
    if (step !== undefined) throw new EntityConflictError(`Step "${id}" already created`);
    return;
  }
  if (step === undefined) {
    if (!lazyStart) throw new WorkflowWorldError(`Step "${id}" not found`);
    return;
  }
  if (lazyStart) throw new EntityConflictError(`Step "${id}" already created`);
  if (isTerminalStepStatus(step.status))
    throw new EntityConflictError(`Cannot modify step in terminal state "${step.status}"`);
  const run = view.run;
  if (run !== undefined && isTerminalWorkflowRunStatus(run.status) && step.status !== 'running')
    throw new RunExpiredError(`Cannot modify non-running step on run in terminal state "${run.status}"`);
  if (request.eventType === 'step_started' && step.retryAfter !== undefined) {
    const wait = step.retryAfter.getTime() - ctx.now.getTime();
    if (wait > 0)
      throw new TooEarlyError(`Cannot start step "${id}": retryAfter timestamp has not been reached yet`, {
        retryAfter: Math.ceil(wait / 1000),
      });
  }
}

function checkHookOrWait(view: RunView, request: Request): void {
  const id = request.correlationId as string;
  switch (request.eventType) {
    case 'hook_created':
      if (view.hooks.has(id) || view.disposedHooks.has(id))
        throw new EntityConflictError(`Hook "${id}" already created`);
      return;
    case 'hook_received':
    case 'hook_disposed':
      if (!view.hooks.has(id)) throw new HookNotFoundError(id);
      return;
    case 'wait_created':
      if (view.waits.has(id)) throw new EntityConflictError(`Wait "${id}" already exists`);
      return;
    case 'wait_completed': {
      const wait = view.waits.get(id);
      if (wait === undefined) throw new WorkflowWorldError(`Wait "${id}" not found`);
      if (wait.status === 'completed') throw new EntityConflictError(`Wait "${id}" already completed`);
      return;
    }
  }
}

/** Plans a request against a run's folded log. Throws the World's error when the rules refuse it. */
export function planEvent(view: RunView, request: Request, ctx: PlanContext): Plan {
  const type = request.eventType;
  const prefix: Event[] = [];
  if (type === 'run_created') {
    if (view.run !== undefined || view.events.length > 0)
      throw new EntityConflictError(`Workflow run "${view.runId}" already exists`);
    validateAttributeChanges(attributeEntries(dataOf(request)), {
      allowReservedAttributes: dataOf(request).allowReservedAttributes === true,
    });
    return { kind: 'append', events: [stamp(view, request, ctx)] };
  }
  if (view.run === undefined) {
    const created = resilientStart(view, request, ctx);
    if (created === undefined) throw new WorkflowRunNotFoundError(view.runId);
    prefix.push(created);
  } else if (requiresNewerWorld(view.run.specVersion)) {
    throw new RunNotSupportedError(view.run.specVersion ?? 0, SPEC_VERSION_CURRENT);
  }
  const lazyStart =
    type === 'step_started' && dataOf(request).stepName !== undefined && dataOf(request).input !== undefined;
  checkTerminalRun(view, request, lazyStart);
  if (type.startsWith('step_')) checkStep(view, request, lazyStart, ctx);
  else checkHookOrWait(view, request);
  if (type === 'run_started' && view.run?.status === 'running') return { kind: 'none' };
  if (type === 'attr_set' && view.run !== undefined) {
    const data = dataOf(request);
    validateAttributeChanges(data.changes as Parameters<typeof validateAttributeChanges>[0], {
      existingKeys: Object.keys(view.run.attributes),
      allowReservedAttributes: data.allowReservedAttributes === true,
    });
  }
  return planAppend(view, request, ctx, prefix, lazyStart);
}

function planAppend(
  view: RunView,
  request: Request,
  ctx: PlanContext,
  prefix: Event[],
  lazyStart: boolean,
): Plan {
  const id = request.correlationId as string;
  if (request.eventType === 'hook_created' && ctx.tokenHeldBy !== undefined) {
    const token = dataOf(request).token;
    const conflict = {
      eventType: 'hook_conflict',
      correlationId: id,
      specVersion: request.specVersion,
      eventData: { token, conflictingRunId: ctx.tokenHeldBy },
    };
    return { kind: 'append', events: [...prefix, stamp(view, conflict as Request, ctx)] };
  }
  let event = stamp(view, request, ctx);
  if (request.eventType === 'run_started' && 'eventData' in event) {
    const { eventData: _runInput, ...rest } = event as Event & { eventData?: unknown };
    event = rest as Event;
  }
  if (!lazyStart) return { kind: 'append', events: [...prefix, event] };
  const { input, stepName, workflowName } = dataOf(request);
  const created = stamp(
    view,
    {
      eventType: 'step_created',
      correlationId: id,
      specVersion: request.specVersion,
      eventData: { stepName, workflowName, input },
    } as Request,
    ctx,
  );
  const { input: _input, ...startData } = dataOf(event);
  return {
    kind: 'append',
    events: [...prefix, created, { ...event, eventData: startData } as Event],
    stepCreated: true,
  };
}
