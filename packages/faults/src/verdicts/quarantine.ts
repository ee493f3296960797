// Removed bytes = quarantined bytes (contract §1, §4): whatever a repair or a tail cut takes out of
// a log must be in quarantine, byte for byte. Checked on every crash state, whose disk before the
// reopen is known exactly, against the disk the recovery left.
import { posix } from 'node:path';
import type { Volume } from 'memfs';
import type { FsLayout } from '../drivers/driver.js';
import type { Checker } from '../workload/runner.js';

/** The report row of the byte-for-byte quarantine check when it cannot run for a driver (`n/a`). */
export const QUARANTINE_CHECK_ROW = 'removed bytes = quarantined bytes';

/**
 * Whether the byte-for-byte quarantine check applies to `layout`: a layout is declared and its
 * logs only grow at their end (`logs` omitted or `'append'`). Pure.
 */
export function quarantineCheckApplies(layout: FsLayout | undefined): layout is FsLayout {
  return layout !== undefined && (layout.logs ?? 'append') === 'append';
}

/**
 * Why a check that needs the driver's layout does not run, or undefined when it does (`what`
 * names the check). Pure.
 */
export function layoutGap(layout: FsLayout | undefined, what: 'removal' | 'quarantine'): string | undefined {
  if (layout === undefined)
    return 'the driver declares no layout (FsHarnessDriver.layout: which files are logs, which quarantine)';
  if (what === 'quarantine' && !quarantineCheckApplies(layout))
    return "logs are rewritten whole (layout.logs 'rewrite'): no byte prefix tells a removal from a rewrite; the tail cut and repair rows judge the events left";
  return undefined;
}

/** Every file under `dir` of a memfs volume, with its bytes. */
export function filesUnder(volume: Volume, dir: string): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  for (const name of volume.readdirSync(dir) as string[]) {
    const path = posix.join(dir, name);
    if (volume.lstatSync(path).isDirectory()) for (const [p, b] of filesUnder(volume, path)) files.set(p, b);
    else files.set(path, Uint8Array.from(volume.readFileSync(path) as Buffer));
  }
  return files;
}

function commonPrefix(a: Uint8Array, b: Uint8Array): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && commonPrefix(a, b) === a.length;
}

/**
 * Whether `range` is the concatenation of some of `files`, each used at most once: a tail cut
 * after a torn-tail repair removes the interrupted lines into one file and the fragment after
 * them into another, so the bytes a log lost may be spread over several quarantine files.
 */
function coveredInOrder(
  range: Uint8Array,
  files: readonly Uint8Array[],
  used: ReadonlySet<number> = new Set(),
): boolean {
  if (range.length === 0) return true;
  return files.some(
    (bytes, i) =>
      !used.has(i) &&
      bytes.length > 0 &&
      bytes.length <= range.length &&
      sameBytes(bytes, range.subarray(0, bytes.length)) &&
      coveredInOrder(range.subarray(bytes.length), files, new Set([...used, i])),
  );
}

/**
 * Checks that every byte taken out of a log between `before` and `after` (paths to bytes) is in a
 * quarantine file that `after` added: the bytes a log lost past what it still shares with its
 * former self must end a new quarantine file whose whole content is the log's former tail, or be
 * the new quarantine files laid end to end. A log that only grew removed nothing. Pure apart from recording violations.
 */
export function checkQuarantine(
  layout: FsLayout,
  before: ReadonlyMap<string, Uint8Array>,
  after: ReadonlyMap<string, Uint8Array>,
  check: Checker,
): void {
  const added = [...after].filter(([path]) => layout.isQuarantine(path) && !before.has(path));
  for (const [path, old] of before) {
    if (!layout.isLog(path) || old.length === 0) continue;
    const now = after.get(path) ?? new Uint8Array();
    const removed = old.length - commonPrefix(old, now);
    if (removed === 0) continue;
    const kept =
      added.some(
        ([, bytes]) => bytes.length >= removed && sameBytes(bytes, old.subarray(old.length - bytes.length)),
      ) ||
      coveredInOrder(
        old.subarray(old.length - removed),
        added.map(([, bytes]) => bytes),
      );
    if (!kept)
      check.violation(
        'unquarantined-bytes',
        `${removed} byte(s) taken out of ${path} (from byte ${old.length - removed}) are in no quarantine file`,
      );
  }
}
