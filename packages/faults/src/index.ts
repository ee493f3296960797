/**
 * @packageDocumentation
 * The storage-fault harness of tidemark (contract §7): FaultyFs (errno errors, short writes, slow
 * syncs), CrashFs (power loss), error and crash sweeps, real faults, a report matrix,
 * the driver loader (`loadHarnessDriver`), and what a backend's own driver builds its engine-specific
 * sweeps from (syscall traces, crash-state rebuilds, the model and checks). The drivers of tidemark's
 * backends live with them: `@tidemark/memory/harness`, `@tidemark/jsonl/harness`,
 * `@tidemark/sqlite/harness`, `@tidemark/postgres/harness`.
 */

export * from './args.js';
export * from './drivers/driver.js';
export * from './drivers/first-party.js';
export * from './drivers/loader.js';
export * from './fs/crash-fs.js';
export * from './fs/errno.js';
export * from './fs/faulty-fs.js';
export * from './fs/memfs-fs.js';
export * from './harness.js';
export * from './real/child-protocol.js';
export * from './real/concurrent-real.js';
export type { PowerLossRequest } from './real/powerloss-child.js';
export type { RaceTraceRequest } from './real/race-trace-child.js';
export * from './real/real.js';
export * from './replay.js';
export * from './report/replay-command.js';
export * from './report/report.js';
export * from './report/report-html.js';
export * from './sweeps/adapter-sweeps.js';
export * from './sweeps/concurrent-pairs.js';
export * from './sweeps/concurrent-sweeps.js';
export * from './sweeps/coverage.js';
export * from './sweeps/damage.js';
export * from './sweeps/mode.js';
export * from './sweeps/removal-sweep.js';
export * from './sweeps/sweeps.js';
export * from './trace/powerloss-disk.js';
export * from './trace/powerloss-ledger.js';
export * from './trace/syscall-trace.js';
export * from './verdicts/concurrent-model.js';
export * from './verdicts/model.js';
export * from './verdicts/probe.js';
export * from './verdicts/quarantine.js';
export * from './verdicts/reread.js';
export * from './verdicts/verify.js';
export * from './workload/concurrent.js';
export * from './workload/runner.js';
export * from './workload/workload.js';
export * from './workload/write-path.js';
