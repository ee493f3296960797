/**
 * @packageDocumentation
 * The storage-fault harness of tidemark (contract §7): FaultyFs (errno errors, short writes, slow
 * syncs), CrashFs (power loss), error and crash sweeps, real faults, a report matrix, and server
 * faults for PostgreSQL (a TCP fault proxy, a private cluster, server actions, statement faults).
 */

export * from './args.js';
export * from './child-protocol.js';
export * from './concurrent.js';
export * from './concurrent-model.js';
export * from './concurrent-pairs.js';
export * from './concurrent-real.js';
export * from './concurrent-sweeps.js';
export * from './crash-fs.js';
export * from './damage.js';
export * from './driver.js';
export * from './drivers.js';
export * from './errno.js';
export * from './faulty-fs.js';
export * from './harness.js';
export * from './memfs-fs.js';
export * from './memory-driver.js';
export * from './model.js';
export * from './powerloss-disk.js';
export * from './powerloss-ledger.js';
export * from './quarantine.js';
export * from './real.js';
export * from './removal-sweep.js';
export * from './replay.js';
export * from './report.js';
export * from './report-html.js';
export * from './reread.js';
export * from './runner.js';
export * from './server/index.js';
export * from './sqlite-powerloss.js';
export * from './sqlite-race-powerloss.js';
export * from './sqlite-settings.js';
export * from './sweeps.js';
export * from './syscall-trace.js';
export * from './verify.js';
export * from './workload.js';
export * from './write-path.js';
