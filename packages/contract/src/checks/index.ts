import type { ContractCheck } from '../harness.js';
import { appendChecks } from './append.js';
import { appendAfterChecks } from './append-after.js';
import { boundaryChecks } from './boundary.js';
import { closeChecks } from './close.js';
import { createChecks } from './create.js';
import { deleteChecks } from './delete.js';
import { listChecks } from './list.js';
import { loadChecks } from './load.js';
import { oneInstanceChecks } from './one-instance.js';
import { optionsChecks } from './options.js';
import { readChecks } from './read.js';
import { roundTripChecks } from './round-trip.js';
import { twoInstancesChecks } from './two-instances.js';
import { updateChecks } from './update.js';

/**
 * Every check of docs/contract.md that needs no fault injection, in the order the suite runs them:
 * grouped by suite, the suites in the order of `contractSuites`.
 */
export const contractChecks: readonly ContractCheck[] = [
  ...roundTripChecks,
  ...createChecks,
  ...optionsChecks,
  ...appendChecks,
  ...appendAfterChecks,
  ...loadChecks,
  ...boundaryChecks,
  ...readChecks,
  ...listChecks,
  ...updateChecks,
  ...deleteChecks,
  ...closeChecks,
  ...oneInstanceChecks,
  ...twoInstancesChecks,
];

/** The check with this name. @throws Error when there is none (a typo in a test). */
export function contractCheck(name: string): ContractCheck {
  const found = contractChecks.find((check) => check.name === name);
  if (found === undefined) throw new Error(`no contract check named ${JSON.stringify(name)}`);
  return found;
}
