// `tidemark list`: sessions, newest first, with the ones the store could not describe on stderr.
import type { SessionSummary } from '@tidemark/core';
import { type Context, openMain, print, printJson } from '../context.js';
import { EXIT_CODES } from '../exit-codes.js';
import { LIST_HEADER, listRows, renderTable } from '../format.js';
import { positiveInteger } from '../options.js';

/** Runs `tidemark list [--cwd DIR] [--limit N] [--json]`. */
export async function runList(ctx: Context): Promise<number> {
  const main = await openMain(ctx);
  const limit = ctx.values.limit === undefined ? undefined : positiveInteger(ctx.values.limit, '--limit');
  const sessions: SessionSummary[] = [];
  const problems: { id: string; code: string; message: string }[] = [];
  let cursor: string | undefined;
  do {
    const page = await main.store.list({
      ...(ctx.values.cwd !== undefined && { cwd: ctx.values.cwd }),
      limit: Math.min(1000, limit ?? 1000),
      ...(cursor !== undefined && { cursor }),
    });
    sessions.push(...page.sessions);
    problems.push(...page.problems.map((p) => ({ id: p.id, code: p.error.code, message: p.error.message })));
    cursor = page.nextCursor;
  } while (cursor !== undefined && (limit === undefined || sessions.length < limit));
  const shown = limit === undefined ? sessions : sessions.slice(0, limit);
  if (ctx.values.json) {
    printJson(ctx.io, { store: main.address.text, sessions: shown, problems });
  } else {
    if (shown.length === 0 && problems.length === 0) print(ctx.io, `no sessions in ${main.address.text}`);
    else if (shown.length > 0)
      print(
        ctx.io,
        renderTable(
          LIST_HEADER.map((h) => ctx.out.bold(h)),
          listRows(shown, new Date(), ctx.out),
        ),
      );
    for (const p of problems)
      ctx.io.stderr.write(`${ctx.err.red('problem')}: ${p.id}: ${p.code}: ${p.message}\n`);
  }
  return problems.length > 0 ? EXIT_CODES.PROBLEMS : EXIT_CODES.OK;
}
