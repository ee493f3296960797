import type {
  Durability,
  FileSystem,
  JsonObject,
  SessionEvent,
  SessionStore,
  SessionWriter,
  WriterEventInput,
} from '@tidemark/core';
import type { ReportBuilder } from '../report/report.js';
import type { WorkloadStep } from '../workload/workload.js';

/**
 * A backend that does all its file access through the core {@link FileSystem} port (like
 * `@tidemark/jsonl`). The harness hands it a FaultyFs or a CrashFs and reopens it after each fault.
 */
export interface FsHarnessDriver extends DefaultDurability {
  name: string;
  kind: 'fs';
  /**
   * Opens a store rooted at `root` on `fs`, with `durability` when the harness sweeps a mode.
   * `durability` undefined means no option at all, as a user opens a store: pass nothing then (not
   * `'strict'`), so that the harness sweeps the backend's own default. The harness creates `root`
   * beforehand.
   */
  open(target: { fs: FileSystem; root: string; durability?: Durability }): Promise<SessionStore>;
  /**
   * The durability modes to sweep (default `['strict']`), each with its own rows and the invariant
   * its mode promises (README: durability modes).
   */
  durabilities?: readonly Durability[];
  /** Real-disk faults (SIGKILL, ENOTDIR, EACCES); omitted: those rows are `n/a`. */
  real?: RealFaultSupport;
  /** Extra real faults this backend knows how to cause (e.g. corrupting its own files). */
  realFaults?: readonly RealFaultCase[];
  /**
   * Which files are logs and which quarantine. Given, tail cuts and repairs are swept (rows
   * `crash + tail cut`, `crash + repair`, `damaged file + repair`) and, for logs that only grow at
   * their end, every crash state checks removed = quarantined bytes; omitted, those rows are `n/a`
   * with the reason.
   */
  layout?: FsLayout;
  /** Wraps the write path's writers (default: core's SessionWriter as it is). */
  writer?: WriterWrapper;
}

/** What a driver says of a store opened with no options (both driver kinds have it). */
export interface DefaultDurability {
  /**
   * The durability a store opened with no options has, as the backend's docs promise it (default
   * `'strict'`). Contract §4 makes `strict` the default, so anything weaker is a `weak-default`
   * violation in the row `defaults (no options)`. The harness also opens stores with no durability
   * option, as a user does, and holds them to this promise: fs drivers in the row
   * `crash (power loss) [default]` (a sample of the crash points, every state of each, replay ids
   * `default/crash:OP:STATE`); engine drivers through their own checks (SQLite: the pragmas of a
   * store opened with no options must be strict's). The SIGKILL children open with
   * {@link RealFaultSupport.options}, which name no durability either.
   */
  defaultDurability?: Durability;
}

/** What the write-path workload (write-path.ts) uses of a SessionWriter. */
export interface WriterUnderTest {
  /** The seq the next pushed event gets. */
  readonly nextSeq: number;
  push(input: WriterEventInput): Promise<SessionEvent>;
  flush(): Promise<void>;
  close(): Promise<void>;
  abandon(): Promise<SessionEvent[]>;
}

/**
 * Wraps every SessionWriter the write-path workload makes (new, from `resume`, from `fork`): an
 * adapter or an application's own layer over the writer is swept with the store under test.
 */
export type WriterWrapper = (writer: SessionWriter) => WriterUnderTest;

/**
 * The file roles of an fs backend, for the removal sweeps and the quarantine invariant
 * (quarantine.ts). A log is whatever file holds one session's events: a file that grows at its
 * end (JSONL), a file rewritten whole on every write (temp file + rename), or each record file of
 * a directory of records (then `isLog` matches every record file).
 */
export interface FsLayout {
  /** An event log, whose bytes a repair may take out only into quarantine. */
  isLog(path: string): boolean;
  /** A quarantine file, where removed bytes go. */
  isQuarantine(path: string): boolean;
  /**
   * How a log changes: `'append'` (default) when it only grows at its end, so every byte a
   * recovery takes out of it is its former tail and must be in a new quarantine file, byte for
   * byte (the `removed bytes = quarantined bytes` check, on every crash state); `'rewrite'` when a
   * write replaces the file whole (or writes a new record file), so old and new versions share no
   * byte prefix and that check cannot tell a removal from a rewrite: its row is `n/a`, and the tail
   * cut and repair rows judge the events that are left instead.
   */
  logs?: 'append' | 'rewrite';
}

/** Throw from it to inject a fault before the named engine step; return to let the step run. */
export type StepInjector = (step: string, detail?: string) => void;

/** Fresh storage of an engine backend; stores opened over it share data, as restarts would. */
export interface EngineStorage {
  /** Opens a store; when `inject` is given, the backend calls it before each storage step. */
  open(inject?: StepInjector): Promise<SessionStore>;
  /** Frees everything `open` created. */
  destroy(): Promise<void>;
}

/**
 * A backend whose storage the harness cannot see as files (memory, SQLite, a server): faults are
 * injected at its own steps through a {@link StepInjector}, and crashes are real SIGKILLs.
 */
export interface EngineHarnessDriver extends DefaultDurability {
  name: string;
  kind: 'engine';
  /**
   * Makes fresh, empty storage; stores opened over it use `durability`. Undefined means no option
   * at all, as a user opens a store: pass nothing then, so that the backend's own default is what
   * runs.
   */
  create(options?: { durability?: Durability }): Promise<EngineStorage>;
  /** The durability modes to sweep (default `['strict']`). */
  durabilities?: readonly Durability[];
  /** Whether `open(inject)` really calls `inject` (false: the error sweep rows are `n/a`). */
  injectsSteps?: boolean;
  /** The workload of the error sweep; default `AGENT_WORKLOAD`. */
  workload?: readonly WorkloadStep[];
  /** Wraps the write path's writers (default: core's SessionWriter as it is). */
  writer?: WriterWrapper;
  real?: RealFaultSupport;
  realFaults?: readonly RealFaultCase[];
  /** Fault classes only a server has (lost connections, restarts, revoked grants), as more cells. */
  serverFaults?: ServerFaultSuite;
  /**
   * Checks of what the engine really does on disk (its effective settings, power loss replayed
   * from a system-call trace), run in the crash phase as more cells; omitted: that row is `n/a`.
   */
  engineChecks?: readonly EngineCheckSuite[];
}

/**
 * One check of an engine driver's storage below its API (`sqlite-settings.ts`, `sqlite-powerloss.ts`):
 * the harness calls `run` once per harness run, in the crash phase, with the same context as a
 * {@link ServerFaultSuite}; the crash points and states it reports go into the backend's totals.
 */
export interface EngineCheckSuite {
  run(context: ServerFaultContext): Promise<{ runs: number; crashPoints?: number; crashStates?: number }>;
}

/** What a {@link ServerFaultSuite} gets from the harness. */
export interface ServerFaultContext {
  /** The matrix to add cells to (with the driver's name as backend). */
  report: ReportBuilder;
  /** CI-sized run. */
  quick: boolean;
  progress?: (phase: string, done: number, total: number) => void;
}

/**
 * Server-only fault classes of an engine driver: the harness calls `run` once per harness run, and
 * the suite adds its cells to the same matrix, checked with the same invariants (runner.ts).
 */
export interface ServerFaultSuite {
  /** Runs every cell; resolves the statements swept and the runs made, for the totals. */
  run(context: ServerFaultContext): Promise<{ operations: number; runs: number }>;
}

/** Any driver the harness accepts. */
export type HarnessDriver = FsHarnessDriver | EngineHarnessDriver;

/**
 * How to open the backend on the real disk, in this process and in child processes (which import
 * built code: run the harness after `pnpm build`).
 */
export interface RealFaultSupport {
  /** Whether a location is a directory (JSONL root) or a file (SQLite database). */
  location: 'dir' | 'file';
  /**
   * Module the child processes import to open the store: a file URL or absolute path, or a
   * relative path or package name, which `loadHarnessDriver` (`--driver`) resolves from the
   * driver module's directory (given straight to `runFaultHarness`, a bare name resolves from
   * `@tidemark/faults`). A module that cannot be imported is a setup error, not a violation.
   */
  module: string;
  /** Name of the async factory exported by `module`, e.g. `openJsonlStore`. */
  factory: string;
  /**
   * The SIGKILL writer appends to all its sessions at once instead of one after another, so that
   * kills land inside commits shared by several sessions (a backend with group commit).
   */
  appendsTogether?: boolean;
  /** The factory's options for a location (must be JSON: it crosses a process boundary). */
  options(location: string): JsonObject;
}

/** A backend-specific real fault: damage or constrain the storage at a location, then the harness checks invariants. */
export interface RealFaultCase {
  /** Report row, e.g. `sqlite: truncated file`. */
  name: string;
  /**
   * Called with a location holding acknowledged sessions, store closed. Inflicts the fault.
   * `destructive`: the damage may destroy data (corruption), so a typed error is an acceptable
   * answer and the store is not verified after `release`; absence and silently shortened loads are
   * still violations. `storeOptions` are merged into the factory options while the fault lasts
   * (e.g. `maxPageCount`). `release` lifts the fault (e.g. drops a lock held by a child).
   */
  inflict(
    location: string,
  ): Promise<{ destructive: boolean; storeOptions?: JsonObject; release?: () => Promise<void> }>;
}
