// `tidemark rekey`: every session of the store re-sealed under the current key, through a staging
// store, resumable after a crash or a kill.
import { createHash } from 'node:crypto';
import { lstat, mkdir, open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { isENOENT, type JsonValue, listAll, toIoError } from '@tidemark/core';
import { type RekeyReport, rekeyStore, sealedKeyId } from '@tidemark/sealed';
import { parseStoreAddress, type StoreAddress } from '../address.js';
import { type Context, mainAddress, openStore, print, printJson, trashAddressOf } from '../context.js';
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

/** True when a JSONL directory or SQLite file is there (a trash that was never used is not). */
async function exists(address: StoreAddress): Promise<boolean> {
  if (address.kind !== 'jsonl' && address.kind !== 'sqlite') return false;
  try {
    await lstat(address.kind === 'jsonl' ? address.dir : address.file);
    return true;
  } catch (error) {
    if (isENOENT(error)) return false;
    throw toIoError(error, `checking ${address.text}`);
  }
}

/** The key ids named by every sealed value anywhere in `value` (nested sealed attrs too). */
function collectKeys(value: JsonValue | undefined, into: Set<string>): void {
  if (value === undefined || value === null) return;
  const key = sealedKeyId(value);
  if (key !== undefined) {
    into.add(key);
    return;
  }
  if (Array.isArray(value)) for (const item of value) collectKeys(item, into);
  else if (typeof value === 'object') for (const item of Object.values(value)) collectKeys(item, into);
}

/** What the trash holds: sessions per key id, read only. */
interface TrashKeys {
  store: string;
  sessions: number;
  keysInUse: Record<string, number>;
  problems: string[];
}

/**
 * The keys the trash's sessions are sealed under. Trashed sessions are not re-sealed: the trash
 * keeps its own record in their attrs, in clear, with the original attrs nested in it, and a
 * restore copies the records back as they are. So their keys are kept from retirement instead.
 */
async function trashKeys(ctx: Context, address: StoreAddress): Promise<TrashKeys> {
  const trash = await openStore(ctx, address, true);
  const out: TrashKeys = { store: address.text, sessions: 0, keysInUse: {}, problems: [] };
  for await (const entry of listAll(trash.store)) {
    if ('problem' in entry) {
      out.problems.push(entry.problem.id);
      continue;
    }
    const { summary } = entry;
    const keys = new Set<string>();
    for (const value of [summary.title, summary.firstPrompt, summary.attrs]) collectKeys(value, keys);
    for await (const event of trash.store.read(summary.id)) collectKeys(event.data, keys);
    out.sessions++;
    for (const key of keys) out.keysInUse[key] = (out.keysInUse[key] ?? 0) + 1;
  }
  return out;
}

/**
 * Runs `tidemark rekey [--store ADDRESS] [--staging ADDRESS] [--keys FILE] [--json]`. Keys are
 * retirable when no session of the store uses them, nor any session in its trash.
 */
export async function runRekey(ctx: Context): Promise<number> {
  if (ctx.args.length > 0)
    throw new CliError('USAGE', `rekey: unexpected argument ${JSON.stringify(ctx.args[0])}`);
  const keyring = await requireKeyring(ctx, 'rekey');
  const address = mainAddress(ctx);
  if (address.kind === 'memory')
    throw new CliError(
      'USAGE',
      'rekey: a memory: store lives only in this process; there is nothing to re-seal',
    );
  const stagingAddress = parseStoreAddress(
    ctx.values.staging ?? defaultStagingAddress(ctx.home, address),
    ctx.io.cwd,
  );
  if (stagingAddress.text === address.text)
    throw new CliError('USAGE', 'rekey: the staging store must not be the store itself (--staging ADDRESS)');
  const release = await lockStore(ctx.home, address);
  let report: RekeyReport;
  try {
    const main = await openStore(ctx, address, true);
    const staging = await openStore(ctx, stagingAddress);
    const progress = progressLine(ctx);
    report = await rekeyStore({
      store: main.store,
      staging: staging.store,
      keyring,
      onProgress: ({ done, total, id }) =>
        progress(done, total, id === undefined ? 'sessions' : `sessions  ${truncate(id, 24)}`),
    });
  } finally {
    await release();
  }
  const trashAddress = trashAddressOf(ctx, address);
  const trash =
    trashAddress.text !== address.text && (await exists(trashAddress))
      ? await trashKeys(ctx, trashAddress)
      : undefined;
  const retirable = report.retirable.filter((key) => trash === undefined || !(key in trash.keysInUse));
  if (ctx.values.json) {
    printJson(ctx.io, {
      store: address.text,
      staging: stagingAddress.text,
      ...report,
      retirable,
      ...(trash !== undefined && { trash }),
    });
  } else {
    printReport(ctx, address, stagingAddress, report);
    if (trash !== undefined && Object.keys(trash.keysInUse).some((key) => key !== keyring.currentId)) {
      const old = Object.entries(trash.keysInUse).filter(([key]) => key !== keyring.currentId);
      print(
        ctx.io,
        `trash ${trash.store}: ${old.map(([key, n]) => `${n} session(s) under ${key}`).join(', ')}, kept as they are: ` +
          'restore and rekey them, or keep those keys until the trash is purged',
      );
    }
    print(
      ctx.io,
      report.complete
        ? `retirable: ${retirable.length === 0 ? 'none (every key of the keyring is in use)' : retirable.join(', ')}`
        : 'retirable: none yet: run tidemark rekey again until it completes',
    );
  }
  return report.complete ? EXIT_CODES.OK : EXIT_CODES.PROBLEMS;
}

function printReport(ctx: Context, address: StoreAddress, staging: StoreAddress, report: RekeyReport): void {
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
