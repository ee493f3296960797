// Network faults between the store and the server, through the TCP fault proxy: for each mode and
// each workload step, the fault is switched on before the step and lifted (pass) after it; then
// the store is reopened directly and checked with the same invariants as every other cell.
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import type { Checker } from '@tidemark/faults';
import { AGENT_WORKLOAD } from '@tidemark/faults';
import { type FaultProxy, type ProxyFault, startFaultProxy, targetOf } from './fault-proxy.js';
import {
  dropSchema,
  emptySchema,
  harnessPool,
  openOnPool,
  type PgEnv,
  scratchSchema,
  sharedSchema,
  workloadThenVerify,
} from './pg-env.js';

/**
 * Client-side timeout of the proxied pool (connect and query): a blackholed connection must end
 * in an error, not hang. Generous enough that a busy machine does not trip it without a fault.
 */
export const PROXY_CLIENT_TIMEOUT_MS = 600;

interface ProxyCell {
  faultClass: string;
  /** The fault switched on before step `index` (0-based; `variant` picks among byte counts). */
  fault(index: number): ProxyFault;
  /** Whether the cell checks that a cut append is resolved by its retry (write-then-cut). */
  outcomeUnknown?: boolean;
}

/** Byte counts of the cut cells: at once, inside a message header, inside a body, after a message. */
const CUT_BYTES = [0, 3, 11, 60, 250];

const CELLS: readonly ProxyCell[] = [
  { faultClass: 'pg proxy: drop', fault: () => ({ mode: 'drop' }) },
  { faultClass: 'pg proxy: blackhole', fault: () => ({ mode: 'blackhole' }) },
  { faultClass: 'pg proxy: delay 15 ms', fault: () => ({ mode: 'delay', ms: 15 }) },
  {
    faultClass: 'pg proxy: delay beyond the client timeout',
    fault: () => ({ mode: 'delay', ms: PROXY_CLIENT_TIMEOUT_MS + 300 }),
  },
  {
    faultClass: 'pg proxy: cut to-server after N bytes',
    fault: (i) => ({ mode: 'cut', direction: 'to-server', afterBytes: CUT_BYTES[i % CUT_BYTES.length]! }),
  },
  {
    faultClass: 'pg proxy: cut to-client after N bytes',
    fault: (i) => ({ mode: 'cut', direction: 'to-client', afterBytes: CUT_BYTES[i % CUT_BYTES.length]! }),
  },
  {
    faultClass: 'pg proxy: write-then-cut (outcome unknown)',
    fault: () => ({ mode: 'commit-then-cut', writes: true, once: true }),
    outcomeUnknown: true,
  },
];

/**
 * Steps each cell faults: all of them, or (quick) two, taken in turn across the cells from the
 * steps that talk to the server, so that the quick run still meets appends, updates and reads.
 */
function stepsFor(cell: ProxyCell, cellIndex: number, quick: boolean): number[] {
  const all = AGENT_WORKLOAD.map((_, i) => i);
  if (!quick) return all;
  // The outcome-unknown cell cuts a first append (INSERT) and a later one (UPDATE + INSERT).
  if (cell.outcomeUnknown === true)
    return all.filter((i) => AGENT_WORKLOAD[i]!.kind === 'append').slice(1, 3);
  const talking = all.filter((i) => AGENT_WORKLOAD[i]!.kind !== 'create');
  const pick = (n: number) => talking[(cellIndex * 2 + n * 7) % talking.length]!;
  return [pick(0), pick(1)];
}

type AppendRecord = { step: number; error?: unknown };

/** The store with every append's outcome recorded (by step), for the outcome-unknown check. */
function recordingAppends(store: SessionStore, currentStep: () => number, log: AppendRecord[]): SessionStore {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'append')
        return async (...args: Parameters<SessionStore['append']>) => {
          try {
            const result = await target.append(...args);
            log.push({ step: currentStep() });
            return result;
          } catch (error) {
            log.push({ step: currentStep(), error });
            throw error;
          }
        };
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * The write-then-cut rule: an append cut after its statement went out must reject with a retryable
 * IO error marked `outcome: 'unknown'`, and the retry of the same batch (the workload retries once)
 * must succeed — idempotently when the first attempt had landed, never as a duplicate.
 */
function checkOutcomeResolved(
  check: Checker,
  log: readonly AppendRecord[],
  step: number,
  cut: boolean,
): void {
  const attempts = log.filter((entry) => entry.step === step);
  const first = attempts[0];
  if (!cut || first?.error === undefined) return;
  const error = first.error;
  const marked =
    isTidemarkError(error) &&
    error.code === 'IO' &&
    error.retryable === true &&
    (error as unknown as { outcome?: unknown }).outcome === 'unknown';
  if (!marked)
    check.violation(
      'outcome-unresolved',
      `an append cut after its commit was sent rejected without outcome 'unknown' (retryable IO): ${String(error)}`,
    );
  if (attempts[1] === undefined || attempts[1].error !== undefined)
    check.violation(
      'outcome-unresolved',
      `the retry of an append whose outcome was unknown did not succeed: ${String(attempts[1]?.error ?? 'not retried')}`,
    );
}

async function runProxyOnce(env: PgEnv, proxy: FaultProxy, cell: ProxyCell, at: number, reuse?: string) {
  const schema = reuse ?? scratchSchema();
  if (reuse !== undefined) await emptySchema(env.url, reuse);
  const pool = harnessPool({
    connectionString: proxy.via(env.url),
    connectionTimeoutMillis: PROXY_CLIENT_TIMEOUT_MS,
    query_timeout: PROXY_CLIENT_TIMEOUT_MS,
  });
  proxy.setFault({ mode: 'pass' });
  let index = -1;
  let cutAtStep = false;
  const cutsBefore = proxy.cutCommits.length;
  const log: AppendRecord[] = [];
  try {
    const run = await workloadThenVerify(
      env,
      schema,
      async () => recordingAppends(await openOnPool(env, schema, pool), () => index, log),
      {
        // The proxy can deliver a statement whose reply is then lost: a rejected write may have
        // landed, so it is in doubt (whole or absent), not known absent.
        checkFailedAppend: false,
        onStep: () => {
          index++;
          if (index === at) proxy.setFault(cell.fault(at));
          else if (index === at + 1) {
            // A once fault switches the proxy back to pass when it fires.
            cutAtStep = cell.outcomeUnknown === true && proxy.fault.mode === 'pass';
            proxy.setFault({ mode: 'pass' });
          }
        },
      },
      () => proxy.setFault({ mode: 'pass' }),
    );
    if (cell.outcomeUnknown === true) checkOutcomeResolved(run.check, log, at, cutAtStep);
    const injected = cell.outcomeUnknown === true ? cutAtStep : true;
    // What the server answered to the cut statement (the client never saw it): the write landed.
    const reply = proxy.cutCommits.slice(cutsBefore).flatMap((cut) => cut.reply.tags);
    return { check: run.check, injected, reply };
  } finally {
    await pool.end().catch(() => undefined);
    if (reuse === undefined) await dropSchema(env.url, schema);
  }
}

/** Every proxy cell at its steps; returns the runs made. */
export async function proxyCellsPg(env: PgEnv): Promise<number> {
  const proxy = await startFaultProxy({ target: targetOf(env.url) });
  const reuse = await sharedSchema(env);
  const plan = CELLS.flatMap((cell, c) => stepsFor(cell, c, env.quick).map((at) => ({ cell, at })));
  let done = 0;
  try {
    for (const { cell, at } of plan) {
      if (env.report.enough) break;
      const { check, injected, reply } = await runProxyOnce(env, proxy, cell, at, reuse);
      const step = AGENT_WORKLOAD[at]!;
      const fault = cell.fault(at);
      const detail =
        fault.mode === 'cut'
          ? ` (${fault.afterBytes} bytes)`
          : reply.length > 0
            ? ` (server replied ${reply.join(', ')})`
            : '';
      env.report.add(
        env.backend,
        cell.faultClass,
        `${fault.mode}${detail} during step ${at + 1} (${step.kind} ${'key' in step ? step.key : ''})`,
        check.outcome,
        injected,
      );
      done++;
      env.progress?.(`${env.backend} proxy faults`, done, plan.length);
    }
  } finally {
    await proxy.close();
    if (reuse !== undefined) await dropSchema(env.url, reuse);
  }
  return done;
}
