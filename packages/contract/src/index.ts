/**
 * @packageDocumentation
 * The published conformance suite of tidemark: any `SessionStore` backend plugs a
 * {@link ContractDriver} into {@link runStoreContract} and gets every rule of docs/contract.md that
 * needs no fault injection checked, plus a model-based comparison with the memory reference backend.
 */
export { contractCheck, contractChecks } from './checks/index.js';
export type { ContractDriver, ContractOptions } from './driver.js';
export {
  CheckContext,
  type ContractCheck,
  ContractSkip,
  ContractViolation,
  collect,
  ev,
  eventTime,
  evs,
  expectCode,
  type ResolvedContractOptions,
  resolveOptions,
  runContractCheck,
  skipCheck,
} from './harness.js';
export { modelBasedCheck } from './model/index.js';
export { runStoreContract } from './run.js';
export { type ContractSuite, contractSuites } from './suites.js';
