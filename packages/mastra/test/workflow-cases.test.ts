// Mastra's storage cases for workflow snapshots (stores/_test-utils in mastra-ai/mastra is
// private), restated in our words, run on Mastra's in-memory store as the control and on
// TidemarkMastraStore over every backend.

import { randomUUID } from 'node:crypto';
import type { WorkflowsStorage } from '@mastra/core/storage';
import type { WorkflowRunState } from '@mastra/core/workflows';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, type Target, targets } from './targets.js';

function snapshot(status: string, stepStatus = 'success'): { snapshot: WorkflowRunState; runId: string } {
  const runId = `run-${randomUUID()}`;
  const value = {
    runId,
    status,
    value: {},
    context: {
      input: { n: 1 },
      'step-1': { status: stepStatus, output: { data: 'x' }, startedAt: 1, endedAt: 2 },
    },
    activePaths: [],
    activeStepsPath: {},
    suspendedPaths: {},
    resumeLabels: {},
    serializedStepGraph: [],
    waitingPaths: {},
    timestamp: Date.now(),
  };
  return { snapshot: value as unknown as WorkflowRunState, runId };
}

describe.each(await targets())('workflow snapshots: $name', (target: Target) => {
  let workflows: WorkflowsStorage;
  beforeAll(async () => {
    workflows = (await target.open()).workflows;
  });
  afterAll(() => target.cleanup());

  it('persists a snapshot and loads it back; null for an unknown run', async () => {
    const { snapshot: s, runId } = snapshot('running');
    await workflows.persistWorkflowSnapshot({ workflowName: 'wf-load', runId, snapshot: s });
    expect(await workflows.loadWorkflowSnapshot({ workflowName: 'wf-load', runId })).toEqual(s);
    expect(await workflows.loadWorkflowSnapshot({ workflowName: 'wf-load', runId: 'nope' })).toBeNull();
    expect(await workflows.loadWorkflowSnapshot({ workflowName: 'other', runId })).toBeNull();
  });

  it('replaces the snapshot of a run persisted again', async () => {
    const { snapshot: s, runId } = snapshot('running');
    await workflows.persistWorkflowSnapshot({ workflowName: 'wf-replace', runId, snapshot: s });
    const done = { ...s, status: 'success' } as WorkflowRunState;
    await workflows.persistWorkflowSnapshot({ workflowName: 'wf-replace', runId, snapshot: done });
    expect(await workflows.loadWorkflowSnapshot({ workflowName: 'wf-replace', runId })).toEqual(done);
    expect((await workflows.listWorkflowRuns({ workflowName: 'wf-replace' })).total).toBe(1);
  });

  it('gets a run by id with Date fields, with and without its workflow name', async () => {
    const { snapshot: s, runId } = snapshot('success');
    await workflows.persistWorkflowSnapshot({ workflowName: 'wf-get', runId, snapshot: s });
    const run = await workflows.getWorkflowRunById({ runId, workflowName: 'wf-get' });
    expect(run).toMatchObject({ runId, workflowName: 'wf-get' });
    expect(run?.createdAt).toBeInstanceOf(Date);
    expect(run?.updatedAt).toBeInstanceOf(Date);
    expect((run!.snapshot as WorkflowRunState).status).toBe('success');
    expect((await workflows.getWorkflowRunById({ runId }))?.workflowName).toBe('wf-get');
    expect(await workflows.getWorkflowRunById({ runId: 'nope', workflowName: 'wf-get' })).toBeNull();
  });

  it('keeps the resource of a run, also when a later snapshot names none', async () => {
    const { snapshot: s, runId } = snapshot('running');
    await workflows.persistWorkflowSnapshot({
      workflowName: 'wf-res',
      runId,
      resourceId: 'user-1',
      snapshot: s,
    });
    await workflows.persistWorkflowSnapshot({
      workflowName: 'wf-res',
      runId,
      snapshot: { ...s, status: 'success' } as WorkflowRunState,
    });
    expect((await workflows.getWorkflowRunById({ runId, workflowName: 'wf-res' }))?.resourceId).toBe(
      'user-1',
    );
  });

  it('lists runs newest first, by name, resource, status and date range, in pages', async () => {
    const name = `wf-list-${randomUUID()}`;
    const runs: string[] = [];
    const base = Date.now() - 10_000;
    for (const [i, status] of ['success', 'failed', 'suspended', 'success'].entries()) {
      const { snapshot: s, runId } = snapshot(status);
      runs.push(runId);
      const at = new Date(base + i * 1000);
      await workflows.persistWorkflowSnapshot({
        workflowName: name,
        runId,
        resourceId: i < 2 ? 'shared' : 'other',
        snapshot: s,
        createdAt: at,
        updatedAt: at,
      });
    }
    await workflows.persistWorkflowSnapshot({
      workflowName: `${name}-else`,
      runId: 'else',
      snapshot: snapshot('success').snapshot,
    });
    const all = await workflows.listWorkflowRuns({ workflowName: name });
    expect(all.total).toBe(4);
    expect(all.runs.map((r) => r.runId)).toEqual([...runs].reverse());
    const page = await workflows.listWorkflowRuns({ workflowName: name, page: 1, perPage: 3 });
    expect(page.total).toBe(4);
    expect(page.runs.map((r) => r.runId)).toEqual([runs[0]]);
    const shared = await workflows.listWorkflowRuns({ workflowName: name, resourceId: 'shared' });
    expect(shared.runs.map((r) => r.runId).sort()).toEqual([runs[0], runs[1]].sort());
    const ok = await workflows.listWorkflowRuns({ workflowName: name, status: 'success' });
    expect(ok.runs.map((r) => r.runId).sort()).toEqual([runs[0], runs[3]].sort());
    const range = await workflows.listWorkflowRuns({
      workflowName: name,
      fromDate: new Date(base + 500),
      toDate: new Date(base + 2500),
    });
    expect(range.runs.map((r) => r.runId)).toEqual([runs[2], runs[1]]);
    expect((await workflows.listWorkflowRuns({ workflowName: 'never-ran' })).runs).toEqual([]);
  });

  it('merges a step result into the stored snapshot and answers the new context', async () => {
    const { snapshot: s, runId } = snapshot('running');
    await workflows.persistWorkflowSnapshot({ workflowName: 'wf-results', runId, snapshot: s });
    const context = await workflows.updateWorkflowResults({
      workflowName: 'wf-results',
      runId,
      stepId: 'step-2',
      result: { status: 'success', output: { two: 2 }, startedAt: 3, endedAt: 4 } as never,
      requestContext: { user: 'u' },
    });
    expect(Object.keys(context).sort()).toEqual(['input', 'step-1', 'step-2']);
    const loaded = await workflows.loadWorkflowSnapshot({ workflowName: 'wf-results', runId });
    expect(loaded?.context['step-2']).toMatchObject({ status: 'success', output: { two: 2 } });
    expect(loaded?.requestContext).toMatchObject({ user: 'u' });
    const missing = await workflows.updateWorkflowResults({
      workflowName: 'wf-results',
      runId: 'no-run',
      stepId: 's',
      result: { status: 'success' } as never,
      requestContext: {},
    });
    expect(missing).toEqual({});
  });

  it('keeps every step result of concurrent updates', async () => {
    const { snapshot: s, runId } = snapshot('running');
    await workflows.persistWorkflowSnapshot({ workflowName: 'wf-concurrent', runId, snapshot: s });
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        workflows.updateWorkflowResults({
          workflowName: 'wf-concurrent',
          runId,
          stepId: `p-${i}`,
          result: { status: 'success', output: i } as never,
          requestContext: {},
        }),
      ),
    );
    const loaded = await workflows.loadWorkflowSnapshot({ workflowName: 'wf-concurrent', runId });
    for (let i = 0; i < 6; i++) expect(loaded?.context[`p-${i}`]).toMatchObject({ output: i });
  });

  it('updates the run state when the status is the one expected, and only then', async () => {
    const { snapshot: s, runId } = snapshot('suspended');
    await workflows.persistWorkflowSnapshot({ workflowName: 'wf-state', runId, snapshot: s });
    const refused = await workflows.updateWorkflowState({
      workflowName: 'wf-state',
      runId,
      opts: { status: 'running', expectedStatus: 'failed' } as never,
    });
    expect(refused).toBeUndefined();
    expect((await workflows.loadWorkflowSnapshot({ workflowName: 'wf-state', runId }))?.status).toBe(
      'suspended',
    );
    const next = await workflows.updateWorkflowState({
      workflowName: 'wf-state',
      runId,
      opts: { status: 'running', expectedStatus: 'suspended' } as never,
    });
    expect(next?.status).toBe('running');
    expect((await workflows.loadWorkflowSnapshot({ workflowName: 'wf-state', runId }))?.status).toBe(
      'running',
    );
    expect(
      await workflows.updateWorkflowState({
        workflowName: 'wf-state',
        runId: 'no-run',
        opts: { status: 'running' } as never,
      }),
    ).toBeUndefined();
  });

  it('deletes a run', async () => {
    const { snapshot: s, runId } = snapshot('success');
    await workflows.persistWorkflowSnapshot({ workflowName: 'wf-delete', runId, snapshot: s });
    await sleep(1);
    await workflows.deleteWorkflowRunById({ workflowName: 'wf-delete', runId });
    expect(await workflows.loadWorkflowSnapshot({ workflowName: 'wf-delete', runId })).toBeNull();
    expect(await workflows.getWorkflowRunById({ runId, workflowName: 'wf-delete' })).toBeNull();
  });
});
