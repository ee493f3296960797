// `tidemark migrate`: copies every session from one store to another, verified and resumable.
import { parseStoreAddress, type StoreAddress } from '../address.js';
import { auditLog, type Context, openStore, print, printJson } from '../context.js';
import { CliError, EXIT_CODES } from '../exit-codes.js';
import { truncate } from '../format.js';
import { openingView, readThrough, requireKeyring } from '../keys.js';
import { type MigrateReport, migrateSessions } from '../migrate.js';
import { progressLine } from '../terminal.js';

/**
 * Runs `tidemark migrate --from ADDRESS --to ADDRESS [--seal | --unseal] [--json]`. Without either
 * flag the records are copied as stored (sealed ones stay sealed: they are bound to their session
 * id, seq, type and time, which the copy keeps). `--seal` opens whatever is sealed in the source
 * and stores every session sealed under the current key; `--unseal` reads the source through a
 * sealed view (a plaintext or tampered record fails its session) and stores plaintext.
 */
export async function runMigrate(ctx: Context): Promise<number> {
  if (ctx.values.from === undefined || ctx.values.to === undefined)
    throw new CliError('USAGE', 'migrate needs --from ADDRESS and --to ADDRESS');
  if (ctx.values.seal && ctx.values.unseal)
    throw new CliError('USAGE', 'migrate: --seal and --unseal exclude each other');
  const mode = ctx.values.seal ? 'seal' : ctx.values.unseal ? 'unseal' : undefined;
  const keyring = mode === undefined ? undefined : await requireKeyring(ctx, `migrate --${mode}`);
  const fromAddress = parseStoreAddress(ctx.values.from, ctx.io.cwd);
  const toAddress = parseStoreAddress(ctx.values.to, ctx.io.cwd);
  if (fromAddress.text === toAddress.text)
    throw new CliError('USAGE', 'migrate: --from and --to are the same store');
  const fromStored = await openStore(ctx, fromAddress, true);
  const toStored = await openStore(ctx, toAddress);
  const from =
    keyring === undefined
      ? fromStored
      : mode === 'seal'
        ? { ...fromStored, store: openingView(fromStored.store, keyring) }
        : readThrough(fromStored, keyring);
  const to = mode === 'seal' ? readThrough(toStored, keyring) : toStored;
  const audit = auditLog(ctx);
  const progress = progressLine(ctx);
  const report = await migrateSessions(from.store, to.store, {
    onProgress: (done, total, id) =>
      progress(done, total, id === undefined ? 'sessions' : `sessions  ${truncate(id, 24)}`),
    onCopied: async (result) => {
      await audit.record('migrated', result.id, toAddress.text, {
        from: fromAddress.text,
        events: result.events,
        hash: result.hash,
        ...(mode !== undefined && { [mode === 'seal' ? 'sealed' : 'unsealed']: true }),
      });
    },
  });
  const { failed, problems, missing, unverified } = report;
  const ok = failed.length === 0 && problems.length === 0 && missing.length === 0 && unverified.length === 0;
  printMigration(ctx, fromAddress, toAddress, report, ok);
  return ok ? EXIT_CODES.OK : EXIT_CODES.PROBLEMS;
}

/** The migration's counts on stdout (as JSON with `--json`), its failures on stderr. */
function printMigration(
  ctx: Context,
  fromAddress: StoreAddress,
  toAddress: StoreAddress,
  report: MigrateReport,
  ok: boolean,
): void {
  const { ids, results, failed, problems, missing, unverified } = report;
  const counts = {
    sessions: ids.length,
    copied: results.filter((r) => r.outcome === 'copied').length,
    resumed: results.filter((r) => r.outcome === 'resumed').length,
    alreadyComplete: results.filter((r) => r.outcome === 'complete').length,
    events: results.reduce((sum, r) => sum + r.events, 0),
  };
  if (ctx.values.json) {
    printJson(ctx.io, {
      from: fromAddress.text,
      to: toAddress.text,
      ok,
      ...counts,
      failed,
      problems,
      missing,
      unverified,
      sessionsDetail: results.map(({ id, outcome, events, appended, hash }) => ({
        id,
        outcome,
        events,
        appended,
        hash,
      })),
    });
    return;
  }
  print(
    ctx.io,
    // Only what was copied and verified counts as migrated; failures are listed below.
    `migrated ${results.length === ids.length ? '' : `${results.length} of `}${counts.sessions} session(s), ` +
      `${counts.events} events from ${fromAddress.text} to ${toAddress.text}: ` +
      `${counts.copied} copied, ${counts.resumed} resumed, ${counts.alreadyComplete} already complete; verified by sha256`,
  );
  for (const f of failed) ctx.io.stderr.write(`${ctx.err.red('failed')}: ${f.id}: ${f.code}: ${f.message}\n`);
  for (const p of problems)
    ctx.io.stderr.write(`${ctx.err.red('unreadable in source')}: ${p.id}: ${p.code}: ${p.message}\n`);
  for (const m of missing) ctx.io.stderr.write(`${ctx.err.red('verification failed')}: ${m}\n`);
  for (const u of unverified)
    ctx.io.stderr.write(`${ctx.err.red('verification failed')}: ${u.id}: ${u.code}: ${u.message}\n`);
}
