// `tidemark show`: a readable timeline of one session.
import { boundaryPredicate, commitStateOf } from '@tidemark/core';
import { type Context, openMain, print, printJson } from '../context.js';
import { EXIT_CODES } from '../exit-codes.js';
import { age, renderTimeline } from '../format.js';
import { commandKeyring, maskEvent, maskSummary, readThrough, sealedKeyIds } from '../keys.js';
import { needId } from '../options.js';
import { absent, findSummary, readEvents } from '../sessions.js';

/**
 * Runs `tidemark show <id> [--json]`. With keys the session is read through a sealed view (a
 * record that does not open is CORRUPT); without, each sealed value is shown as "sealed" and the
 * key ids it is sealed under are named.
 */
export async function runShow(ctx: Context): Promise<number> {
  const id = needId(ctx.args, 'show');
  const keyring = await commandKeyring(ctx);
  const stored = await openMain(ctx);
  const main = readThrough(stored, keyring);
  if (!(await main.store.has(id))) return absent(ctx, stored, id);
  const found = await findSummary(main.store, id);
  const read = await readEvents(main.store, id);
  const sealedWith = keyring === undefined ? sealedKeyIds(found, read) : [];
  const summary = keyring === undefined && found !== undefined ? maskSummary(found) : found;
  const events = keyring === undefined ? read.map(maskEvent) : read;
  const state = commitStateOf(events, boundaryPredicate());
  if (ctx.values.json) {
    printJson(ctx.io, {
      summary,
      committedSeq: state.committedSeq,
      interrupted: state.interrupted,
      ...(sealedWith.length > 0 && { sealedWith }),
      events,
    });
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
    sealedWith.length > 0
      ? `${s.bold('sealed')}  under key ${sealedWith.join(', ')}: give --keys FILE or TIDEMARK_KEYS to open`
      : undefined,
  ].filter((x) => x !== undefined);
  print(ctx.io, `${head.join('\n')}\n\n${renderTimeline(events, state.committedSeq, s)}`);
  return EXIT_CODES.OK;
}
