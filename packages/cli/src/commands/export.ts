// `tidemark export`: one session as JSONL on stdout, a header line then the events.
import { type Context, openMain } from '../context.js';
import { encodeExportEvent, encodeExportHeader } from '../exchange.js';
import { EXIT_CODES } from '../exit-codes.js';
import { needId } from '../options.js';
import { absent, findSummary, readEvents } from '../sessions.js';

/** Runs `tidemark export <id>`. */
export async function runExport(ctx: Context): Promise<number> {
  const id = needId(ctx.args, 'export');
  const main = await openMain(ctx);
  if (!(await main.store.has(id))) return absent(ctx, main, id);
  const summary = await findSummary(main.store, id);
  if (summary === undefined) return absent(ctx, main, id);
  const events = await readEvents(main.store, id);
  // The header carries the count read now, so that an import can detect a truncated stream.
  ctx.io.stdout.write(`${encodeExportHeader({ ...summary, eventCount: events.length })}\n`);
  for (const event of events) ctx.io.stdout.write(`${encodeExportEvent(event)}\n`);
  return EXIT_CODES.OK;
}
