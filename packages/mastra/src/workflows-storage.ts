// Mastra's workflows domain over a tidemark store: each workflow run is one session, every
// snapshot Mastra persists is one batch whose closing event carries the run with its snapshot, so
// loading a run reads one event from the log's end; the session's summary carries what
// `listWorkflowRuns` filters on (name, resource, status, dates, the memory thread).
import {
  createEmptyWorkflowSnapshot,
  getSnapshotMemoryInfo,
  matchesExpectedWorkflowStatus,
  mergeWorkflowStepResult,
  normalizePerPage,
  type StorageListWorkflowRunsInput,
  type UpdateWorkflowStateOptions,
  type WorkflowRun,
  type WorkflowRuns,
  WorkflowsStorage,
} from '@mastra/core/storage';
import type { StepResult, WorkflowRunState } from '@mastra/core/workflows';
import { nowIso, type SessionStore, TidemarkError } from '@tidemark/core';
import { isoOf, type JsonObject, msOf, toJsonObject, withDates } from './codec.js';
import { checkId, runSessionId } from './ids.js';
import { listSessions } from './listing.js';
import {
  type Batch,
  commit,
  type Head,
  knownHead,
  type RecordHead,
  readHead,
  removeSession,
} from './session-log.js';

interface RunState extends Head {
  run: JsonObject | undefined;
}

const runState = ({ record, close: _, ...head }: RecordHead): RunState => ({ ...head, run: record });

function runBatch(run: JsonObject, op: string): Batch {
  const snapshot = run.snapshot as WorkflowRunState | null;
  const threadId = getSnapshotMemoryInfo(snapshot ?? undefined)?.threadId;
  const attrs: JsonObject = {
    mastra: 'run',
    workflowName: run.workflowName!,
    runId: run.runId!,
    createdAt: run.createdAt!,
    updatedAt: run.updatedAt!,
    ...(run.resourceId !== undefined && { resourceId: run.resourceId }),
    ...(typeof snapshot?.status === 'string' && { status: snapshot.status }),
    ...(typeof threadId === 'string' && { threadId }),
  };
  return {
    events: [],
    close: { op, run },
    summary: { title: `${run.workflowName} ${run.runId}`.slice(0, 200), attrs },
  };
}

const decodeRun = (run: JsonObject): WorkflowRun =>
  withDates<WorkflowRun>(structuredClone(run), ['createdAt', 'updatedAt']);

/**
 * Mastra's `WorkflowsStorage` kept in a tidemark store. A read-modify-write of a snapshot
 * (`updateWorkflowResults`, `updateWorkflowState`) is planned on a read of the same call, or on
 * what this process knows from its last write to the run on a store that checks
 * `append(…, { after })`, and lands only right after the event it was planned after, so concurrent
 * updates from several processes never lose one another's step results
 * (`supportsConcurrentUpdates()` is true). A storage fault rejects with the store's
 * `TidemarkError`: a run is never reported missing ("no snapshot found") because a read failed.
 */
export class TidemarkWorkflowsStorage extends WorkflowsStorage {
  readonly #store: SessionStore;

  constructor(store: SessionStore) {
    super();
    this.#store = store;
  }

  override supportsConcurrentUpdates(): boolean {
    return true;
  }

  /** Deletes every workflow run of the store (tests only). */
  override async dangerouslyClearAll(): Promise<void> {
    for (const listed of await listSessions(this.#store, 'run'))
      await removeSession(this.#store, listed.sessionId);
  }

  async #read(workflowName: string, runId: string): Promise<RunState> {
    return runState(await readHead(this.#store, runSessionId(workflowName, runId), 'run'));
  }

  #update<T>(
    workflowName: string,
    runId: string,
    plan: (state: RunState) => { run?: JsonObject; result: T; op: string },
  ): Promise<T> {
    const id = runSessionId(workflowName, runId);
    return commit(this.#store, id, {
      read: () => this.#read(workflowName, runId),
      fromKnown: (known) => runState(knownHead(id, known, 'run')),
      plan: (state) => {
        const planned = plan(state);
        return {
          result: planned.result,
          ...(planned.run !== undefined && { batch: runBatch(planned.run, planned.op) }),
        };
      },
    });
  }

  override async persistWorkflowSnapshot(args: {
    workflowName: string;
    runId: string;
    resourceId?: string;
    snapshot: WorkflowRunState;
    createdAt?: Date;
    updatedAt?: Date;
  }): Promise<void> {
    const workflowName = checkId(args?.workflowName, 'persistWorkflowSnapshot: workflowName');
    const runId = checkId(args.runId, 'persistWorkflowSnapshot: runId');
    const snapshot = toJsonObject(args.snapshot, 'persistWorkflowSnapshot: snapshot');
    await this.#update(workflowName, runId, ({ run: previous }) => {
      const now = nowIso();
      const resourceId = args.resourceId ?? previous?.resourceId;
      const run: JsonObject = {
        workflowName,
        runId,
        ...(resourceId !== undefined && { resourceId }),
        snapshot,
        createdAt: isoOf(
          args.createdAt,
          'persistWorkflowSnapshot: createdAt',
          String(previous?.createdAt ?? now),
        ),
        updatedAt: isoOf(args.updatedAt, 'persistWorkflowSnapshot: updatedAt', now),
      };
      return { run, result: undefined, op: 'persistWorkflowSnapshot' };
    });
  }

  override async loadWorkflowSnapshot(args: {
    workflowName: string;
    runId: string;
  }): Promise<WorkflowRunState | null> {
    const { run } = await this.#read(
      checkId(args?.workflowName, 'loadWorkflowSnapshot: workflowName'),
      checkId(args.runId, 'loadWorkflowSnapshot: runId'),
    );
    const snapshot = run?.snapshot;
    return snapshot === undefined || snapshot === null
      ? null
      : (structuredClone(snapshot) as unknown as WorkflowRunState);
  }

  override async updateWorkflowResults(args: {
    workflowName: string;
    runId: string;
    stepId: string;
    result: StepResult<unknown, unknown, unknown, unknown>;
    requestContext: Record<string, unknown>;
  }): Promise<Record<string, StepResult<unknown, unknown, unknown, unknown>>> {
    const workflowName = checkId(args?.workflowName, 'updateWorkflowResults: workflowName');
    const runId = checkId(args.runId, 'updateWorkflowResults: runId');
    const stepId = checkId(args.stepId, 'updateWorkflowResults: stepId');
    const result = toJsonObject(args.result, 'updateWorkflowResults: result');
    const requestContext = toJsonObject(args.requestContext ?? {}, 'updateWorkflowResults: requestContext');
    return this.#update(workflowName, runId, ({ run: previous }) => {
      if (previous === undefined) return { result: {}, op: '' }; // no such run: Mastra's stores answer {}
      const snapshot = structuredClone(
        previous.snapshot ?? createEmptyWorkflowSnapshot(runId),
      ) as unknown as WorkflowRunState;
      const context = mergeWorkflowStepResult({
        snapshot,
        stepId,
        result: result as unknown as StepResult<unknown, unknown, unknown, unknown>,
        requestContext,
      });
      const run = {
        ...previous,
        snapshot: toJsonObject(snapshot, 'updateWorkflowResults: snapshot'),
        updatedAt: nowIso(),
      };
      return {
        run,
        result: context as Record<string, StepResult<unknown, unknown, unknown, unknown>>,
        op: 'updateWorkflowResults',
      };
    });
  }

  override async updateWorkflowState(args: {
    workflowName: string;
    runId: string;
    opts: UpdateWorkflowStateOptions;
  }): Promise<WorkflowRunState | undefined> {
    const workflowName = checkId(args?.workflowName, 'updateWorkflowState: workflowName');
    const runId = checkId(args.runId, 'updateWorkflowState: runId');
    const { expectedStatus, ...state } = (args.opts ?? {}) as UpdateWorkflowStateOptions & {
      expectedStatus?: unknown;
    };
    const patch = toJsonObject(state, 'updateWorkflowState: opts');
    return this.#update(workflowName, runId, ({ run: previous }) => {
      if (previous === undefined) return { result: undefined, op: '' };
      const before = (previous.snapshot ?? createEmptyWorkflowSnapshot(runId)) as unknown as WorkflowRunState;
      if (
        !matchesExpectedWorkflowStatus(
          before.status,
          expectedStatus as UpdateWorkflowStateOptions['expectedStatus'],
        )
      ) {
        return { result: undefined, op: '' };
      }
      const snapshot = { ...(before as unknown as JsonObject), ...patch };
      const run = { ...previous, snapshot, updatedAt: nowIso() };
      return {
        run,
        result: structuredClone(snapshot) as unknown as WorkflowRunState,
        op: 'updateWorkflowState',
      };
    });
  }

  override async listWorkflowRuns(args: StorageListWorkflowRunsInput = {}): Promise<WorkflowRuns> {
    const { workflowName, fromDate, toDate, page, perPage, resourceId, threadId, status } = args;
    if (page !== undefined && (!Number.isSafeInteger(page) || page < 0)) {
      throw new TidemarkError(
        'INVALID',
        `listWorkflowRuns: page must be a non-negative integer, got ${page}`,
      );
    }
    let runs = (await listSessions(this.#store, 'run')).filter(({ attrs }) => {
      if (workflowName !== undefined && attrs.workflowName !== workflowName) return false;
      if (resourceId !== undefined && attrs.resourceId !== resourceId) return false;
      if (status !== undefined && attrs.status !== status) return false;
      if (threadId !== undefined && attrs.threadId !== threadId) return false;
      const created = msOf(attrs.createdAt);
      if (fromDate !== undefined && created < fromDate.getTime()) return false;
      return toDate === undefined || created <= toDate.getTime();
    });
    const total = runs.length;
    runs.sort(
      (a, b) => msOf(b.attrs.createdAt) - msOf(a.attrs.createdAt) || a.sessionId.localeCompare(b.sessionId),
    );
    if (perPage !== undefined && page !== undefined) {
      const size = normalizePerPage(perPage, Number.MAX_SAFE_INTEGER);
      runs = runs.slice(page * size, page * size + size);
    }
    const out: WorkflowRun[] = [];
    for (const { attrs } of runs) {
      const { run } = await this.#read(String(attrs.workflowName), String(attrs.runId));
      if (run !== undefined) out.push(decodeRun(run)); // deleted since it was listed
    }
    return { runs: out, total };
  }

  override async getWorkflowRunById(args: {
    runId: string;
    workflowName?: string;
  }): Promise<WorkflowRun | null> {
    const runId = checkId(args?.runId, 'getWorkflowRunById: runId');
    if (args.workflowName !== undefined) {
      const { run } = await this.#read(checkId(args.workflowName, 'getWorkflowRunById: workflowName'), runId);
      return run === undefined ? null : decodeRun(run);
    }
    const newest = (await listSessions(this.#store, 'run'))
      .filter(({ attrs }) => attrs.runId === runId)
      .sort((a, b) => msOf(b.attrs.createdAt) - msOf(a.attrs.createdAt))[0];
    if (newest === undefined) return null;
    const { run } = await this.#read(String(newest.attrs.workflowName), runId);
    return run === undefined ? null : decodeRun(run);
  }

  override async deleteWorkflowRunById(args: { runId: string; workflowName: string }): Promise<void> {
    const workflowName = checkId(args?.workflowName, 'deleteWorkflowRunById: workflowName');
    await removeSession(
      this.#store,
      runSessionId(workflowName, checkId(args.runId, 'deleteWorkflowRunById: runId')),
    );
  }
}
