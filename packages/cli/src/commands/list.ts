// `tidemark list`: sessions, newest first, with the ones the store could not describe on stderr.
import {
  type ListProblem,
  listAll,
  MAX_LIST_LIMIT,
  type SessionStore,
  type SessionSummary,
} from '@tidemark/core';
import { type Context, openMain, print, printJson } from '../context.js';
import { EXIT_CODES } from '../exit-codes.js';
import { LIST_HEADER, listRows, renderTable } from '../format.js';
import { commandKeyring, maskSummary, readThrough } from '../keys.js';
import { positiveInteger } from '../options.js';

/** A session `list` could not describe, as printed. */
interface ListedProblem {
  id: string;
  code: string;
  message: string;
}

/**
 * The sessions to show and the problems to report. A limit the store takes in one page is one
 * `list` call (its problems are the ones found on the way); anything larger walks the pages and
 * stops at the first session past the limit.
 */
async function listSessions(
  store: SessionStore,
  cwd: string | undefined,
  limit: number | undefined,
): Promise<{ sessions: SessionSummary[]; problems: ListedProblem[] }> {
  const described = (p: ListProblem): ListedProblem => ({
    id: p.id,
    code: p.error.code,
    message: p.error.message,
  });
  if (limit !== undefined && limit <= MAX_LIST_LIMIT) {
    const page = await store.list({ ...(cwd !== undefined && { cwd }), limit });
    return { sessions: page.sessions, problems: page.problems.map(described) };
  }
  const sessions: SessionSummary[] = [];
  const problems: ListedProblem[] = [];
  for await (const entry of listAll(store, cwd !== undefined ? { cwd } : {})) {
    if ('problem' in entry) problems.push(described(entry.problem));
    else if (limit !== undefined && sessions.length >= limit) break;
    else sessions.push(entry.summary);
  }
  return { sessions, problems };
}

/** Runs `tidemark list [--cwd DIR] [--limit N] [--json]`. */
export async function runList(ctx: Context): Promise<number> {
  const keyring = await commandKeyring(ctx);
  const main = readThrough(await openMain(ctx), keyring);
  const limit = ctx.values.limit === undefined ? undefined : positiveInteger(ctx.values.limit, '--limit');
  const listed = await listSessions(main.store, ctx.values.cwd, limit);
  const problems = listed.problems;
  // Without keys a sealed title is shown as "sealed", never as its ciphertext.
  const shown = keyring === undefined ? listed.sessions.map(maskSummary) : listed.sessions;
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
