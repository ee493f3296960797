// The World's Storage over tidemark: every state change is an `events.create`, which appends the
// event to its run's log in the same atomic append that makes the entity change (the entity being
// a fold of that log); runs, steps and hooks are read-only views of the logs.
import { isValidId, type SessionStore, TidemarkError } from '@tidemark/core';
import { HookNotFoundError, WorkflowRunNotFoundError, WorkflowWorldError } from '@workflow/errors';
import type {
  AnyEventRequest,
  CreateEventParams,
  Event,
  EventResult,
  GetEventParams,
  GetHookParams,
  GetStepParams,
  GetWorkflowRunParams,
  Hook,
  ListEventsByCorrelationIdParams,
  ListEventsParams,
  ListHooksParams,
  ListWorkflowRunStepsParams,
  ListWorkflowRunsParams,
  ResolveData,
  Step,
  Storage,
  WorkflowRun,
} from '@workflow/world';
import { isTerminalStepEventType, stripEventDataRefs, validateUlidTimestamp } from '@workflow/world';
import { HookTokens } from './hook-tokens.js';
import { monotonicUlid } from './ids.js';
import { bySeq, page } from './paging.js';
import { type Plan, planEvent } from './plan.js';
import { RunLogs } from './run-log.js';
import { dataOf, type RunView } from './view.js';

/** Where each kind of session of one World is listed (`cwd`), under the World's namespace. */
export interface Layout {
  runs: string;
  tokens: string;
  streams: (runId: string) => string;
}

/** The `cwd`s of the runs, hook tokens and streams of the World named `namespace`. */
export const layoutOf = (namespace: string): Layout => ({
  runs: `workflow:${namespace}/runs`,
  tokens: `workflow:${namespace}/hook-tokens`,
  streams: (runId) => `workflow:${namespace}/streams/${runId}`,
});

// Callers own what they are handed: the runtime hydrates fields in place (a hook's metadata), so
// every entity and event leaves as a copy, never as the folded view's own object.
const runData = (run: WorkflowRun, resolve: ResolveData | undefined): WorkflowRun =>
  structuredClone(
    resolve === 'none' ? ({ ...run, input: undefined, output: undefined } as WorkflowRun) : run,
  );
const stepData = (step: Step, resolve: ResolveData | undefined): Step =>
  structuredClone(resolve === 'none' ? ({ ...step, input: undefined, output: undefined } as Step) : step);
function hookData(hook: Hook, resolve: ResolveData | undefined): Hook {
  if (resolve !== 'none') return structuredClone(hook);
  const { metadata: _metadata, ...rest } = hook;
  return structuredClone(rest) as Hook;
}
const eventData = (event: Event, resolve: ResolveData | undefined): Event =>
  structuredClone(stripEventDataRefs(event, resolve ?? 'all'));
const copy = <T>(value: T): T => (value === undefined ? value : structuredClone(value));

function assertRunId(runId: string): void {
  if (!isValidId(runId))
    throw new TidemarkError('INVALID', `runId ${JSON.stringify(runId)} is not a valid run id`);
}

function resultOf(
  view: RunView,
  request: AnyEventRequest,
  plan: Plan,
  params: CreateEventParams | undefined,
): EventResult {
  if (plan.kind === 'none') return { run: copy(view.run) };
  const event = plan.events.at(-1) as Event;
  const type = event.eventType;
  const id = request.correlationId;
  const result: EventResult = { event: eventData(event, params?.resolveData) };
  if (type.startsWith('run_') || type === 'attr_set') result.run = copy(view.run);
  if (id !== undefined && type.startsWith('step_')) result.step = copy(view.steps.get(id));
  if (id !== undefined && type === 'hook_created') result.hook = copy(view.hooks.get(id));
  if (id !== undefined && type.startsWith('wait_')) result.wait = copy(view.waits.get(id));
  if (plan.stepCreated === true) Object.assign(result, { stepCreated: true });
  if (type === 'run_started') {
    result.events = view.events.map((e) => eventData(e, params?.resolveData));
    result.cursor = String(view.events.length - 1);
    result.hasMore = false;
  }
  const since = (params as { sinceCursor?: unknown } | undefined)?.sinceCursor;
  if (isTerminalStepEventType(type) && typeof since === 'string') {
    result.events = view.events.slice(Number(since) + 1).map((e) => eventData(e, params?.resolveData));
    result.cursor = String(view.events.length - 1);
    result.hasMore = false;
  }
  return result;
}

/** Storage plus what the World's start needs. */
export interface TidemarkStorage extends Storage {
  /** Every run id of this World, oldest first. */
  runIds(): Promise<string[]>;
}

/** The reads and the one write of the World's Storage, over the run logs and the token logs. */
class WorldStorage {
  readonly runs: RunLogs;
  readonly tokens: HookTokens;

  constructor(
    private readonly store: SessionStore,
    private readonly layout: Layout,
  ) {
    this.runs = new RunLogs(store, layout.runs);
    this.tokens = new HookTokens(store, this.runs, layout.tokens);
  }

  async runIds(): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const found = await this.store.list({
        cwd: this.layout.runs,
        limit: 1000,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      // A run the store cannot describe is an error, never a run silently left out of the list.
      const problem = found.problems[0];
      if (problem !== undefined) throw problem.error;
      for (const session of found.sessions) ids.push(session.id);
      cursor = found.nextCursor;
    } while (cursor !== undefined);
    return ids.sort();
  }

  async allViews(): Promise<RunView[]> {
    const views: RunView[] = [];
    for (const id of await this.runIds()) views.push(await this.runs.view(id));
    return views;
  }

  async storedRun(id: string): Promise<RunView & { run: WorkflowRun }> {
    assertRunId(id);
    const view = await this.runs.view(id);
    if (view.run === undefined) throw new WorkflowRunNotFoundError(id);
    return view as RunView & { run: WorkflowRun };
  }

  async create(
    runId: string | null,
    request: AnyEventRequest,
    params?: CreateEventParams,
  ): Promise<EventResult> {
    let id = runId ?? '';
    if (request.eventType === 'run_created' && id === '') id = `wrun_${monotonicUlid()}`;
    else if (id === '')
      throw new TidemarkError('INVALID', `events.create(${request.eventType}): runId is required`);
    else if (request.eventType === 'run_created') {
      const problem = validateUlidTimestamp(id, 'wrun_');
      if (problem !== null) throw new WorkflowWorldError(problem);
    }
    assertRunId(id);
    let tokenHeldBy: string | undefined;
    if (request.eventType === 'hook_created') {
      const token = dataOf(request).token as string;
      tokenHeldBy = await this.tokens.claim(token, { runId: id, hookId: request.correlationId });
    }
    const title = request.eventType === 'run_created' ? (dataOf(request).workflowName as string) : undefined;
    const { view, plan } = await this.runs.commit(
      id,
      (current) =>
        planEvent(current, request, {
          now: new Date(),
          newEventId: () => `evnt_${monotonicUlid()}`,
          ...(tokenHeldBy !== undefined ? { tokenHeldBy } : {}),
        }),
      title,
    );
    return resultOf(view, request, plan, params);
  }

  async listRuns(params?: ListWorkflowRunsParams) {
    const found = (await this.allViews())
      .map((view) => view.run)
      .filter((run): run is WorkflowRun => run !== undefined)
      .filter((run) => params?.workflowName === undefined || run.workflowName === params.workflowName)
      .filter((run) => params?.status === undefined || run.status === params.status);
    const result = page(found, (run) => run.runId, params?.pagination, 'desc');
    return { ...result, data: result.data.map((run) => runData(run, params?.resolveData)) };
  }

  async getStep(runId: string, stepId: string, params?: { resolveData?: ResolveData }): Promise<Step> {
    const step = (await this.storedRun(runId)).steps.get(stepId);
    if (step === undefined) throw new WorkflowWorldError(`Step ${stepId} in run ${runId} not found`);
    return stepData(step, params?.resolveData);
  }

  async listSteps(params: ListWorkflowRunStepsParams) {
    const view = await this.storedRun(params.runId);
    const steps = [...view.steps.values()].sort((a, b) => (a.stepId < b.stepId ? -1 : 1));
    const result = page(steps, (s) => s.stepId, params.pagination, 'desc');
    return { ...result, data: result.data.map((step) => stepData(step, params.resolveData)) };
  }

  async getEvent(runId: string, eventId: string, params?: GetEventParams): Promise<Event> {
    assertRunId(runId);
    const event = (await this.runs.view(runId)).events.find((e) => e.eventId === eventId);
    if (event === undefined) throw new WorkflowWorldError(`Event ${eventId} in run ${runId} not found`);
    return eventData(event, params?.resolveData);
  }

  async listEvents(params: ListEventsParams) {
    assertRunId(params.runId);
    const view = await this.runs.view(params.runId);
    const seqs = view.events.map((_, seq) => seq);
    const result = page(seqs, String, params.pagination, 'asc', bySeq);
    return {
      ...result,
      data: result.data.map((seq) => eventData(view.events[seq] as Event, params.resolveData)),
    };
  }

  async listEventsByCorrelationId(params: ListEventsByCorrelationIdParams) {
    const found: Event[] = [];
    for (const view of await this.allViews())
      for (const event of view.events) if (event.correlationId === params.correlationId) found.push(event);
    const result = page(found, (e) => e.eventId, params.pagination, 'asc');
    return { ...result, data: result.data.map((event) => eventData(event, params.resolveData)) };
  }

  async getHook(hookId: string, params?: GetHookParams): Promise<Hook> {
    for (const view of await this.allViews()) {
      const hook = view.hooks.get(hookId);
      if (hook !== undefined) return hookData(hook, params?.resolveData);
    }
    throw new HookNotFoundError(hookId);
  }

  async getHookByToken(token: string, params?: GetHookParams): Promise<Hook> {
    const holder = await this.tokens.holder(token);
    const hook =
      holder === undefined ? undefined : (await this.runs.view(holder.runId)).hooks.get(holder.hookId);
    if (hook === undefined) throw new HookNotFoundError(token);
    return hookData(hook, params?.resolveData);
  }

  async listHooks(params: ListHooksParams) {
    const views = params.runId !== undefined ? [await this.storedRun(params.runId)] : await this.allViews();
    const hooks = views
      .flatMap((view) => [...view.hooks.values()])
      .sort((a, b) => (a.hookId < b.hookId ? -1 : 1));
    const result = page(hooks, (h) => h.hookId, params.pagination, 'desc');
    return { ...result, data: result.data.map((hook) => hookData(hook, params.resolveData)) };
  }
}

/** The World's Storage over `store`, its sessions listed under `layout`. */
export function createStorage(store: SessionStore, layout: Layout): TidemarkStorage {
  const s = new WorldStorage(store, layout);
  return {
    runIds: () => s.runIds(),
    runs: {
      get: (async (id: string, params?: GetWorkflowRunParams) =>
        runData((await s.storedRun(id)).run, params?.resolveData)) as Storage['runs']['get'],
      list: ((params?: ListWorkflowRunsParams) => s.listRuns(params)) as Storage['runs']['list'],
    },
    steps: {
      get: ((runId: string, stepId: string, params?: GetStepParams) =>
        s.getStep(runId, stepId, params)) as Storage['steps']['get'],
      list: ((params: ListWorkflowRunStepsParams) => s.listSteps(params)) as Storage['steps']['list'],
    },
    events: {
      create: ((runId: string | null, request: AnyEventRequest, params?: CreateEventParams) =>
        s.create(runId, request, params)) as Storage['events']['create'],
      get: (runId, eventId, params) => s.getEvent(runId, eventId, params),
      list: (params) => s.listEvents(params),
      listByCorrelationId: (params) => s.listEventsByCorrelationId(params),
    },
    hooks: {
      get: (hookId, params) => s.getHook(hookId, params),
      getByToken: (token, params) => s.getHookByToken(token, params),
      list: (params) => s.listHooks(params),
    },
  };
}
