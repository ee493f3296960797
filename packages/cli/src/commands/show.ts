// `tidemark show`: a readable timeline of one session.
import { boundaryPredicate, commitStateOf } from '@tidemark/core';
import { type Context, openMain, print, printJson } from '../context.js';
import { EXIT_CODES } from '../exit-codes.js';
import { age, renderTimeline } from '../format.js';
import { needId } from '../options.js';
import { absent, findSummary, readEvents } from '../sessions.js';

/** Runs `tidemark show <id> [--json]`. */
export async function runShow(ctx: Context): Promise<number> {
  const id = needId(ctx.args, 'show');
  const main = await openMain(ctx);
  if (!(await main.store.has(id))) return absent(ctx, main, id);
  const summary = await findSummary(main.store, id);
  const events = await readEvents(main.store, id);
  const state = commitStateOf(events, boundaryPredicate());
  if (ctx.values.json) {
    printJson(ctx.io, { summary, committedSeq: state.committedSeq, interrupted: state.interrupted, events });
    return EXIT_CODES.OK;
  }
  const s = ctx.out;
  const head = [
    `${s.bold('session')} ${id}`,
    summary?.title !== undefined ? `${s.bold('title')}   ${summary.title}` : undefined,
    summary?.cwd !== undefined ? `${s.bold('cwd')}     ${summary.cwd}` : undefined,
    summary?.parent !== undefined
      ? `${s.bold('parent')}  ${summary.parent.id} @ seq ${summary.parent.seq}`
      : undefined,
    summary !== undefined
      ? `${s.bold('created')} ${summary.createdAt}  ${s.bold('updated')} ${summary.updatedAt} (${age(summary.updatedAt, new Date())})`
      : undefined,
    `${s.bold('events')}  ${events.length}, committed through seq ${state.committedSeq}${state.interrupted ? s.yellow(' (interrupted)') : ''}`,
  ].filter((x) => x !== undefined);
  print(ctx.io, `${head.join('\n')}\n\n${renderTimeline(events, state.committedSeq, s)}`);
  return EXIT_CODES.OK;
}
