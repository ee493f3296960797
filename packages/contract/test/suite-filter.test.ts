import { describe, expect, it, type RunnerTask } from 'vitest';
import { contractChecks, contractSuites, runStoreContract } from '../src/index.js';
import { modelBasedCheck } from '../src/model/index.js';
import { selectChecks } from '../src/suites.js';
import { memoryDriver } from './fixtures/memory-driver.js';

// Two filtered runs registered at the top level, as a backend's test file would; the tests below
// read what they registered from the collected test tree.
runStoreContract(memoryDriver('only read and list'), { only: ['read', 'list'] });
runStoreContract(memoryDriver('all but model and instances'), {
  skip: ['model', 'one instance', 'two instances'],
});

const allChecks = [...contractChecks, modelBasedCheck(1)];
const groupsOf = (checks: readonly { group: string }[]) => [...new Set(checks.map((c) => c.group))];

/** The `describe` blocks (suite name → test titles) a run registered under its top-level block. */
function registered(file: RunnerTask, driverName: string): Map<string, string[]> {
  const tasks = 'tasks' in file ? file.tasks : [];
  const run = tasks.find((task) => task.name === `tidemark store contract: ${driverName}`);
  if (run === undefined || !('tasks' in run)) throw new Error(`no run named ${driverName}`);
  return new Map(
    run.tasks.map((suite) => [suite.name, 'tasks' in suite ? suite.tasks.map((t) => t.name) : []]),
  );
}

describe('runStoreContract only/skip', () => {
  it('registers just the suites named in only, each with all of its checks', ({ task }) => {
    const suites = registered(task.file, 'only read and list');
    expect([...suites.keys()]).toEqual(['read', 'list']);
    for (const group of ['read', 'list']) {
      const titles = contractChecks.filter((c) => c.group === group).map((c) => c.name);
      expect(titles.length).toBeGreaterThan(0);
      expect(suites.get(group)).toEqual(titles);
    }
  });

  it('registers every suite but those named in skip', ({ task }) => {
    const suites = registered(task.file, 'all but model and instances');
    expect([...suites.keys()]).toEqual(
      contractSuites.filter((s) => !['model', 'one instance', 'two instances'].includes(s)),
    );
  });

  it('rejects an unknown suite name and lists the valid ones, before registering anything', () => {
    const unknown = (options: object) => () => runStoreContract(memoryDriver('never registered'), options);
    // `has` has no suite of its own: its rules are checked inside create, delete and close.
    expect(unknown({ only: ['has'] })).toThrow(
      /unknown suite "has" in only; the suites are: "round trip", "create", .*"model"/,
    );
    expect(unknown({ skip: ['append', 'lists'] })).toThrow(/unknown suite "lists" in skip/);
    expect(unknown({ only: 'append' })).toThrow(/only must be a list of suites; the suites are/);
  });

  it('rejects a filter that leaves nothing to run', () => {
    expect(() => selectChecks(allChecks, { only: ['read'], skip: ['read'] })).toThrow(
      /leave no check to run/,
    );
  });

  it('selects by group in suite order; only then skip; an empty only is no filter', () => {
    expect(selectChecks(allChecks)).toEqual(allChecks);
    expect(selectChecks(allChecks, { only: [] })).toEqual(allChecks);
    expect(groupsOf(selectChecks(allChecks, { only: ['model', 'append'] }))).toEqual(['append', 'model']);
    expect(groupsOf(selectChecks(allChecks, { only: ['append', 'list', 'model'], skip: ['list'] }))).toEqual([
      'append',
      'model',
    ]);
    expect(selectChecks(allChecks, { skip: ['model'] })).toEqual(contractChecks);
  });

  it('names every group of checks as a suite, in the order the checks run', () => {
    expect(groupsOf(allChecks)).toEqual([...contractSuites]);
  });
});
