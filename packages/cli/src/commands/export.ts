// `tidemark export`: one session as JSONL on stdout, a header line then the events.
import { type Context, openMain } from '../context.js';
import { encodeExportEvent, encodeExportHeader } from '../exchange.js';
import { EXIT_CODES } from '../exit-codes.js';
import { readThrough, requireKeyring } from '../keys.js';
import { needId } from '../options.js';
import { absent, findSummary, readEvents } from '../sessions.js';

/**
 * Runs `tidemark export <id> [--decrypt]`: the session as stored (a sealed session stays sealed,
 * and an import of it needs no keys), or with `--decrypt` opened with the keys, as plaintext.
 */
export async function runExport(ctx: Context): Promise<number> {
  const id = needId(ctx.args, 'export');
  const keyring = ctx.values.decrypt ? await requireKeyring(ctx, 'export --decrypt') : undefined;
  const stored = await openMain(ctx);
  const main = readThrough(stored, keyring);
  if (!(await main.store.has(id))) return absent(ctx, stored, id);
  const summary = await findSummary(main.store, id);
  if (summary === undefined) return absent(ctx, stored, id);
  const events = await readEvents(main.store, id);
  // The header carries the count read now, so that an import can detect a truncated stream.
  ctx.io.stdout.write(`${encodeExportHeader({ ...summary, eventCount: events.length })}\n`);
  for (const event of events) ctx.io.stdout.write(`${encodeExportEvent(event)}\n`);
  return EXIT_CODES.OK;
}
