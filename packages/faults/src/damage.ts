// The damaged-file sweep (bit rot, a bad sector) of fs-kind drivers: every file a clean workload
// left, one byte flipped in turn, the store reopened and probed.
import { posix } from 'node:path';
import { Volume } from 'memfs';
import type { FsHarnessDriver } from './driver.js';
import { memfsFileSystem } from './memfs-fs.js';
import { WorkloadModel } from './model.js';
import { probeStore } from './probe.js';
import { filesUnder } from './quarantine.js';
import type { ReportBuilder } from './report.js';
import { Checker, runWorkload } from './runner.js';
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
  let runs = 0;
  for (const [path, bytes] of files) {
    if (report.enough) break;
    if (bytes.length === 0) continue;
    const volume = new Volume();
    for (const [p, b] of files) {
      volume.mkdirSync(posix.dirname(p), { recursive: true });
      const copy = Buffer.from(b);
      if (p === path) copy[copy.length >> 1] = copy[copy.length >> 1]! ^ 0x5a;
      volume.writeFileSync(p, copy, { mode: 0o600 });
    }
    const fs = memfsFileSystem(volume);
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
  }
  return runs;
}
