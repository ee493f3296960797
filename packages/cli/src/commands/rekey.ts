// `tidemark rekey`: every session of the store re-sealed under the current key, through a staging
// store, resumable after a crash or a kill.
import { createHash } from 'node:crypto';
import { mkdir, open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { toIoError } from '@tidemark/core';
import { type RekeyReport, rekeyStore } from '@tidemark/sealed';
import { parseStoreAddress, type StoreAddress } from '../address.js';
import { type Context, mainAddress, openStore, print, printJson } from '../context.js';
import { CliError, EXIT_CODES } from '../exit-codes.js';
import { truncate } from '../format.js';
import { requireKeyring } from '../keys.js';
import { progressLine } from '../terminal.js';

/** 16 hex digits naming a store, for the files rekey keeps per store. */
function storeHash(address: StoreAddress): string {
  return createHash('sha256').update(address.text).digest('hex').slice(0, 16);
}

/** The default staging store of `main`: `jsonl:$TIDEMARK_HOME/rekey-staging/<store hash>`. */
export function defaultStagingAddress(home: string, main: StoreAddress): string {
  return `jsonl:${join(home, 'rekey-staging', storeHash(main))}`;
}

/** True when the process `pid` is alive (signal 0 reaches it, or it exists under another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes `$TIDEMARK_HOME/rekey-<store hash>.lock` for this process: two rekeys of one store at
 * once could each drop a staging copy the other still needs. A lock left by a process that is
 * gone (killed) is taken over. Returns the release function.
 * @throws CliError CONFLICT when a live rekey holds it.
 */
async function lockStore(home: string, main: StoreAddress): Promise<() => Promise<void>> {
  await mkdir(home, { recursive: true, mode: 0o700 }).catch((error: unknown) => {
    throw toIoError(error, `creating ${home}`);
  });
  const file = join(home, `rekey-${storeHash(main)}.lock`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(file, 'wx', 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return () => unlink(file).catch(() => undefined);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw toIoError(error, `creating ${file}`);
    }
    const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && alive(pid))
      throw new CliError(
        'CONFLICT',
        `another tidemark rekey (pid ${pid}) is re-sealing ${main.text} (lock ${file})`,
      );
    // Left by a rekey that is gone: take it over.
    await unlink(file).catch(() => undefined);
  }
  throw new CliError('CONFLICT', `could not take the rekey lock ${file}`);
}

/** Runs `tidemark rekey [--store ADDRESS] [--staging ADDRESS] [--keys FILE] [--json]`. */
export async function runRekey(ctx: Context): Promise<number> {
  if (ctx.args.length > 0)
    throw new CliError('USAGE', `rekey: unexpected argument ${JSON.stringify(ctx.args[0])}`);
  const keyring = await requireKeyring(ctx, 'rekey');
  const address = mainAddress(ctx);
  const stagingAddress = parseStoreAddress(
    ctx.values.staging ?? defaultStagingAddress(ctx.home, address),
    ctx.io.cwd,
  );
  if (stagingAddress.text === address.text)
    throw new CliError('USAGE', 'rekey: the staging store must not be the store itself (--staging ADDRESS)');
  if (address.kind === 'memory')
    throw new CliError(
      'USAGE',
      'rekey: a memory: store lives only in this process; there is nothing to re-seal',
    );
  const release = await lockStore(ctx.home, address);
  try {
    const main = await openStore(ctx, address, true);
    const staging = await openStore(ctx, stagingAddress);
    const progress = progressLine(ctx);
    const report = await rekeyStore({
      store: main.store,
      staging: staging.store,
      keyring,
      onProgress: ({ done, total, id }) =>
        progress(done, total, id === undefined ? 'sessions' : `sessions  ${truncate(id, 24)}`),
    });
    printReport(ctx, address, stagingAddress, report);
    return report.complete ? EXIT_CODES.OK : EXIT_CODES.PROBLEMS;
  } finally {
    await release();
  }
}

function printReport(ctx: Context, address: StoreAddress, staging: StoreAddress, report: RekeyReport): void {
  if (ctx.values.json) {
    printJson(ctx.io, { store: address.text, staging: staging.text, ...report });
    return;
  }
  const resumed =
    report.resumed.length > 0 ? ` (${report.resumed.length} resumed from an interrupted run)` : '';
  const lines = [
    `rekey of ${address.text} under key ${report.currentKeyId}: ${report.sessions} session(s): ` +
      `${report.resealed.length} re-sealed${resumed}, ${report.alreadyCurrent.length} already current, ` +
      `${report.changed.length} changed (retry later), ${report.failed.length} failed; verified by sha256`,
    `keys in use: ${
      Object.entries(report.keysInUse)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([key, n]) => `${key} (${n} session(s))`)
        .join(', ') || 'none'
    }`,
    report.complete
      ? `retirable: ${report.retirable.length === 0 ? 'none (the keyring holds only keys in use)' : report.retirable.join(', ')}`
      : 'retirable: none yet: run tidemark rekey again until it completes',
  ];
  print(ctx.io, lines.join('\n'));
  const err = ctx.err;
  for (const id of report.changed)
    ctx.io.stderr.write(`${err.yellow('changed')}: ${id}: changed while being re-sealed; run rekey again\n`);
  for (const f of report.failed)
    ctx.io.stderr.write(`${err.red('failed')}: ${f.id}: ${f.code}: ${f.message}\n`);
  for (const p of report.problems)
    ctx.io.stderr.write(`${err.red('unreadable')}: ${p.id}: ${p.code}: ${p.message}\n`);
  for (const id of report.stagingLeft)
    ctx.io.stderr.write(
      `${err.red('in staging')}: ${id}: kept in ${staging.text}; run rekey again to put it back (do not delete that store)\n`,
    );
}
