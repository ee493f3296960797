// `tidemark trash list|restore <id>|purge [--dry-run]`: the trash of the main store.
import type { ListProblem } from '@tidemark/core';
import type { Lifecycle } from '@tidemark/lifecycle';
import type { Backend } from '../backends.js';
import { type Context, openLifecycleFor, openMain, print, printJson } from '../context.js';
import { CliError, EXIT_CODES } from '../exit-codes.js';
import { renderTable, truncate } from '../format.js';

/** Runs `tidemark trash` and its subcommands (`list` by default). */
export async function runTrash(ctx: Context): Promise<number> {
  const [sub, ...rest] = ctx.args;
  const main = await openMain(ctx);
  const lifecycle = await openLifecycleFor(ctx, main, true);
  switch (sub) {
    case undefined:
    case 'list':
      return listTrash(ctx, lifecycle);
    case 'restore':
      return restoreFromTrash(ctx, main, lifecycle, rest);
    case 'purge':
      return ctx.values['dry-run'] ? previewPurge(ctx, lifecycle) : purgeTrash(ctx, lifecycle);
    default:
      throw new CliError('USAGE', `trash: unknown subcommand ${JSON.stringify(sub)} (list, restore, purge)`);
  }
}

async function listTrash(ctx: Context, lifecycle: Lifecycle): Promise<number> {
  const { entries, problems } = await lifecycle.trashListing();
  if (ctx.values.json) printJson(ctx.io, entries);
  else if (entries.length === 0) {
    // Not "empty" when it holds sessions it could not describe (reported below).
    if (problems.length === 0) print(ctx.io, 'the trash is empty');
  } else
    print(
      ctx.io,
      renderTable(
        ['ID', 'TRASHED', 'REASON', 'PURGE AFTER', 'EVENTS', 'TITLE'].map((h) => ctx.out.bold(h)),
        entries.map((e) => [
          e.id,
          e.trashedAt,
          e.reason,
          e.purgeAfter,
          String(e.summary.eventCount),
          truncate(e.summary.title ?? e.summary.firstPrompt ?? '', 40),
        ]),
      ),
    );
  reportTrashProblems(ctx, problems);
  return problems.length > 0 ? EXIT_CODES.PROBLEMS : EXIT_CODES.OK;
}

async function restoreFromTrash(
  ctx: Context,
  main: Backend,
  lifecycle: Lifecycle,
  args: readonly string[],
): Promise<number> {
  const id = args[0];
  if (id === undefined || args.length > 1)
    throw new CliError('USAGE', 'trash restore needs exactly one session id');
  const summary = await lifecycle.restore(id);
  if (ctx.values.json) printJson(ctx.io, summary);
  else print(ctx.io, `restored ${id} (${summary.eventCount} events) to ${main.address.text}`);
  return EXIT_CODES.OK;
}

async function previewPurge(ctx: Context, lifecycle: Lifecycle): Promise<number> {
  const now = new Date();
  const { entries, problems } = await lifecycle.trashListing();
  const due = entries.filter((e) => Date.parse(e.purgeAfter) <= now.getTime());
  if (ctx.values.json) printJson(ctx.io, { dryRun: true, wouldPurge: due.map((e) => e.id) });
  else
    print(
      ctx.io,
      `would purge ${due.length} session(s) past their grace period${due.map((e) => `\n  ${e.id}`).join('')}`,
    );
  reportTrashProblems(ctx, problems);
  return problems.length > 0 ? EXIT_CODES.PROBLEMS : EXIT_CODES.OK;
}

async function purgeTrash(ctx: Context, lifecycle: Lifecycle): Promise<number> {
  const report = await lifecycle.purge();
  if (ctx.values.json)
    printJson(ctx.io, {
      purged: report.purged,
      kept: report.kept.map((e) => ({ id: e.id, purgeAfter: e.purgeAfter })),
      problems: report.problems.map((p) => ({ id: p.id, error: p.error.toJSON() })),
    });
  else
    print(
      ctx.io,
      `purged ${report.purged.length} session(s); ${report.kept.length} still within their grace period`,
    );
  reportTrashProblems(ctx, report.problems);
  return report.problems.length > 0 ? EXIT_CODES.PROBLEMS : EXIT_CODES.OK;
}

/** Trashed sessions the trash store could not describe: on stderr, never left out silently. */
function reportTrashProblems(ctx: Context, problems: readonly ListProblem[]): void {
  for (const p of problems)
    ctx.io.stderr.write(`${ctx.err.red('problem')}: ${p.id}: ${p.error.code}: ${p.error.message}\n`);
}
