// `tidemark prune`: previews (by default) or moves sessions not updated for a while to the trash.
import { type Context, openLifecycleFor, openMain, print, printJson } from '../context.js';
import { EXIT_CODES } from '../exit-codes.js';
import { age, truncate } from '../format.js';
import { days } from '../options.js';
import { withSpinner } from '../terminal.js';

/** Runs `tidemark prune [--older-than DAYS] [--yes] [--json]`. */
export async function runPrune(ctx: Context): Promise<number> {
  const main = await openMain(ctx);
  const lifecycle = await openLifecycleFor(ctx, main, true);
  const olderThanDays = days(ctx.values['older-than'], '--older-than', 30);
  const dryRun = ctx.values.yes !== true;
  const report = await withSpinner(ctx, dryRun ? 'finding sessions to prune' : 'pruning', () =>
    lifecycle.prune({ olderThanDays, dryRun }),
  );
  if (ctx.values.json) {
    printJson(ctx.io, {
      dryRun: report.dryRun,
      cutoff: report.cutoff,
      toTrash: report.toTrash.map((s) => s.id),
      keptActive: report.keptActive.map((s) => s.id),
      trashed: report.trashed,
      removedEmpty: report.removedEmpty,
      failed: report.failed.map((f) => ({ id: f.id, error: f.error.toJSON() })),
      problems: report.problems.map((p) => ({ id: p.id, error: p.error.toJSON() })),
    });
  } else {
    const verb = report.dryRun ? 'would move' : 'moved';
    const ids = report.dryRun ? report.toTrash.map((s) => s.id) : report.trashed;
    print(
      ctx.io,
      `${verb} ${ids.length} session(s) not updated since ${report.cutoff} to the trash (grace ${lifecycle.graceDays} days)`,
    );
    for (const summary of report.dryRun
      ? report.toTrash
      : report.toTrash.filter((s) => report.trashed.includes(s.id))) {
      print(
        ctx.io,
        `  ${summary.id}  ${age(summary.updatedAt, new Date())}  ${truncate(summary.title ?? summary.firstPrompt ?? '', 50)}`,
      );
    }
    for (const id of report.removedEmpty)
      print(ctx.io, `  removed ${id}: no events, nothing for the trash to keep (summary in the audit log)`);
    for (const kept of report.keptActive) print(ctx.io, `  kept ${kept.id}: active session of a project`);
    for (const f of report.failed)
      ctx.io.stderr.write(`${ctx.err.red('failed')}: ${f.id}: ${f.error.code}: ${f.error.message}\n`);
    for (const p of report.problems)
      ctx.io.stderr.write(`${ctx.err.red('problem')}: ${p.id}: ${p.error.code}: ${p.error.message}\n`);
    if (report.dryRun && ids.length > 0) print(ctx.io, 'preview only: run again with --yes to apply');
  }
  return report.failed.length > 0 || report.problems.length > 0 ? EXIT_CODES.PROBLEMS : EXIT_CODES.OK;
}
