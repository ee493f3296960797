// The damaged-file sweep (bit rot, a bad sector) of fs-kind drivers: every file a clean workload
// left, one byte flipped in turn, the store reopened and probed.
import { posix } from 'node:path';
import type { FileSystem } from '@tidemark/core';
import type { Volume } from 'memfs';
import type { FsHarnessDriver } from '../drivers/driver.js';
import { memfsFileSystem, newVolume } from '../fs/memfs-fs.js';
import type { ReportBuilder } from '../report/report.js';
import { WorkloadModel } from '../verdicts/model.js';
import { probeStore } from '../verdicts/probe.js';
import { filesUnder, layoutGap } from '../verdicts/quarantine.js';
import { Checker, runWorkload } from '../workload/runner.js';
import { removalProbe } from './removal-sweep.js';
import { SWEEP_ROOT } from './sweeps.js';

/**
 * Damaged storage (bit rot, a bad sector): the workload runs without faults, then for every file
 * it left, a copy of the disk with one byte in the middle of that file flipped is reopened and
 * probed. A typed error is the right answer for what the damage destroyed; a load that returns a
 * shortened history, a session reported absent or an untyped error is a violation. The file
 * layout is the backend's own: the harness damages each file in turn, whatever it is.
 */
export async function damageSweepFs(driver: FsHarnessDriver, report: ReportBuilder): Promise<number> {
  const base = memfsFileSystem();
  await base.mkdir(SWEEP_ROOT, { recursive: true });
  const model = new WorkloadModel();
  const setup = new Checker();
  const opened = await setup.attempt('open', () => driver.open({ fs: base, root: SWEEP_ROOT }));
  if (!opened.ok) return 0;
  await runWorkload(opened.value, model, setup, { checkFailedAppend: false });
  await setup.attempt('close', () => opened.value.close());
  for (const session of model.sessions.values()) session.created = false;
  const files = filesUnder(base.volume, '/');
  const noRepair = layoutGap(driver.layout, 'removal');
  if (noRepair !== undefined) report.notApplicable(driver.name, 'damaged file + repair', noRepair);
  let runs = 0;
  for (const [path, bytes] of files) {
    if (report.enough) break;
    if (bytes.length === 0) continue;
    const fs = flipped(files, path);
    const check = new Checker();
    await probeStore(() => driver.open({ fs, root: SWEEP_ROOT }), model.clone(), check, true);
    report.add(
      driver.name,
      'damaged file (one byte flipped)',
      `byte ${bytes.length >> 1} of ${path} flipped`,
      check.outcome,
      true,
    );
    runs++;
    // A damaged log is what `repair({ dropCorrupt })` exists for: what it drops must be in
    // quarantine, what it keeps a prefix of the log, and the store must take the next turn.
    const { layout } = driver;
    if (layout === undefined || !layout.isLog(path) || report.enough) continue;
    const repaired = await removalProbe(
      { ...driver, layout },
      flipped(files, path),
      model.clone(),
      'repair',
      {
        damaged: true,
        durability: 'strict',
      },
    );
    report.add(
      driver.name,
      'damaged file + repair',
      `byte ${bytes.length >> 1} of ${path} flipped; then repair`,
      repaired.outcome,
      false,
    );
    runs++;
  }
  return runs;
}

/** A copy of `files` on a fresh volume, with the middle byte of `path` flipped. */
function flipped(files: ReadonlyMap<string, Uint8Array>, path: string): FileSystem & { volume: Volume } {
  const volume = newVolume();
  for (const [p, b] of files) {
    volume.mkdirSync(posix.dirname(p), { recursive: true });
    const copy = Buffer.from(b);
    if (p === path) copy[copy.length >> 1] = copy[copy.length >> 1]! ^ 0x5a;
    volume.writeFileSync(p, copy, { mode: 0o600 });
  }
  return memfsFileSystem(volume);
}
