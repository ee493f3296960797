import type { FileSystem } from '@tidemark/core';
import { type ErrnoName, makeErrnoError } from './errno.js';

/** Operations after which a disk may have made data durable: the crash points ACE says matter most. */
export const SYNC_OPS: ReadonlySet<string> = new Set(['datasync', 'sync', 'syncDir']);

/** What one injection does. */
export type FaultKind =
  /**
   * The call fails with the errno before touching storage. Except a `write` on a handle opened
   * `'r+dsync'` (O_DSYNC): it is a write plus an fdatasync, and its error comes from the sync half,
   * so the whole buffer is stored (in the file, as in the page cache) before the call fails.
   */
  | 'error'
  /** A `write` stores the first part of its buffer, then fails with the errno (ENOSPC mid-write). */
  | 'short-write';

/** When and how a {@link FaultyFs} injects a fault. */
export interface FaultPlan {
  /** The 1-based number of the matching call that fails. */
  at: number;
  /** Errno of the injected error (default `EIO`). */
  errno?: ErrnoName;
  /** `once` fails call `at` only; `persistent` fails every matching call from `at` on (default `once`). */
  mode?: 'once' | 'persistent';
  /** Only calls of these operations count and fail (e.g. `['write', 'datasync']`); all when omitted. */
  ops?: readonly string[];
  /** Only calls whose path matches count and fail. */
  path?: RegExp;
  /** Default `error`. */
  kind?: FaultKind;
}

/** One traced call. */
export interface TraceEntry {
  /** 0-based position among all calls through this FaultyFs. */
  index: number;
  /** Method name: a FileSystem method (`open`, `rename`, …) or a handle method (`write`, `datasync`, …). */
  op: string;
  /** The path concerned (for handle methods: the path the handle was opened with). */
  path: string | undefined;
  /** `injected` when this call met a planned fault. */
  outcome: 'ok' | 'error' | 'injected';
}

/** Options of {@link FaultyFs}. */
export interface FaultyFsOptions {
  /** Faults to inject; each is counted independently. */
  plans?: readonly FaultPlan[];
  /** Delay in milliseconds added to every sync-family call (slow disks). */
  slowSyncMs?: number;
  /** Called after every traced call, e.g. to take a crash snapshot. */
  onCall?: (entry: TraceEntry) => void;
}

interface PlanState {
  plan: FaultPlan;
  seen: number;
}

function planMatches(plan: FaultPlan, op: string, path: string | undefined): boolean {
  if (plan.ops !== undefined && !plan.ops.includes(op)) return false;
  if (plan.path !== undefined && (path === undefined || !plan.path.test(path))) return false;
  return true;
}

/**
 * Decides whether the call about to happen meets a fault: pure, so that the counting rules are
 * tested on their own. Advances each plan's count of matching calls.
 */
export function decideFault(
  states: PlanState[],
  op: string,
  path: string | undefined,
): FaultPlan | undefined {
  let hit: FaultPlan | undefined;
  for (const state of states) {
    if (!planMatches(state.plan, op, path)) continue;
    state.seen += 1;
    const persistent = (state.plan.mode ?? 'once') === 'persistent';
    const fires = persistent ? state.seen >= state.plan.at : state.seen === state.plan.at;
    if (fires && hit === undefined) hit = state.plan;
  }
  return hit;
}

type AnyFunction = (...args: unknown[]) => unknown;

function isHandleLike(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && typeof (value as { close?: unknown }).close === 'function'
  );
}

function methodNames(target: object): string[] {
  const names = new Set<string>();
  for (let o: object | null = target; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const key of Object.getOwnPropertyNames(o)) {
      if (key === 'constructor') continue;
      const descriptor = Object.getOwnPropertyDescriptor(o, key);
      if (descriptor !== undefined && typeof descriptor.value === 'function') names.add(key);
    }
  }
  return [...names];
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Wraps any {@link FileSystem} and injects errno errors, short writes and slow syncs by plan, while
 * tracing every call. Wrapping is generic: every function of the port and of the handles it
 * returns is traced and injectable, including methods added to the port later. The only flag it
 * knows is `'r+dsync'`: a failed write on such a handle leaves its data behind (see {@link FaultKind}).
 *
 * @example
 * ```ts
 * const faulty = new FaultyFs(memfsFileSystem(), { plans: [{ at: 3, ops: ['datasync'], errno: 'EIO' }] });
 * const store = await openJsonlStore({ root: '/s', fs: faulty.fs });
 * ```
 */
export class FaultyFs {
  /** The wrapped port to hand to a backend. */
  readonly fs: FileSystem;
  /** Every call so far, in order. */
  readonly trace: TraceEntry[] = [];
  private states: PlanState[];
  private lifted = false;

  constructor(
    /** The wrapped port, untouched: what the store sees once the fault is lifted. */
    readonly inner: FileSystem,
    private readonly options: FaultyFsOptions = {},
  ) {
    this.states = (options.plans ?? []).map((plan) => ({ plan, seen: 0 }));
    this.fs = this.wrap(inner as unknown as Record<string, unknown>, undefined) as unknown as FileSystem;
  }

  /** Number of calls that met an injected fault. */
  get injected(): number {
    return this.trace.filter((entry) => entry.outcome === 'injected').length;
  }

  /** Stops injecting (the fault is "lifted"); calls still pass through and are traced. */
  lift(): void {
    this.lifted = true;
  }

  /** Replaces the plans and resumes injecting, counting from zero. */
  arm(plans: readonly FaultPlan[]): void {
    this.states = plans.map((plan) => ({ plan, seen: 0 }));
    this.lifted = false;
  }

  private wrap(
    target: Record<string, unknown>,
    handlePath: string | undefined,
    dsync = false,
  ): Record<string, unknown> {
    const wrapped: Record<string, unknown> = {};
    for (const name of methodNames(target)) {
      const method = target[name] as AnyFunction;
      wrapped[name] = (...args: unknown[]) => {
        const path = handlePath ?? (typeof args[0] === 'string' ? args[0] : undefined);
        return this.call(name, path, args, (callArgs) => method.apply(target, callArgs), dsync);
      };
    }
    return wrapped;
  }

  private async call(
    op: string,
    path: string | undefined,
    args: unknown[],
    run: (args: unknown[]) => unknown,
    dsync: boolean,
  ): Promise<unknown> {
    const entry: TraceEntry = { index: this.trace.length, op, path, outcome: 'ok' };
    this.trace.push(entry);
    try {
      const plan = this.lifted ? undefined : decideFault(this.states, op, path);
      if (this.options.slowSyncMs !== undefined && SYNC_OPS.has(op)) await sleep(this.options.slowSyncMs);
      if (plan !== undefined) {
        entry.outcome = 'injected';
        const errno = plan.errno ?? ((plan.kind ?? 'error') === 'short-write' ? 'ENOSPC' : 'EIO');
        if (plan.kind === 'short-write' && op === 'write') {
          // write(buffer, offset, length, position): store the first half, then fail as a full disk would.
          const [buffer, offset, length, position] = args as [Uint8Array, number, number, number | null];
          const part = Math.floor(length / 2);
          if (part > 0) await run([buffer, offset, part, position]);
        } else if (dsync && op === 'write') {
          // O_DSYNC: the data was copied in, then the implicit fdatasync failed.
          await run(args);
        }
        throw makeErrnoError(errno, op, path);
      }
      let result: unknown;
      try {
        result = await run(args);
      } catch (error) {
        entry.outcome = 'error';
        throw error;
      }
      if (op === 'open' && isHandleLike(result)) return this.wrap(result, path, args[1] === 'r+dsync');
      return result;
    } finally {
      this.options.onCall?.(entry);
    }
  }
}
