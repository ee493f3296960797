// `tidemark repair`: quarantines torn bytes (and, on request, the interrupted tail or a corrupt
// end) of one session, audits what it took out and says so.
import { auditLog, type Context, openMain, print, printJson } from '../context.js';
import { EXIT_CODES } from '../exit-codes.js';
import { type RepairOutcome, repairBackend } from '../maintenance.js';
import { needId } from '../options.js';
import { absent } from '../sessions.js';

/** Runs `tidemark repair <id> [--cut-tail] [--drop-corrupt]`. */
export async function runRepair(ctx: Context): Promise<number> {
  const id = needId(ctx.args, 'repair');
  const main = await openMain(ctx);
  if (!(await main.store.has(id))) return absent(ctx, main, id);
  const outcome = await repairBackend(main, id, {
    tail: ctx.values['cut-tail'] ? 'cut' : 'keep',
    dropCorrupt: ctx.values['drop-corrupt'] === true,
  });
  const changed =
    (outcome.tornBytes ?? 0) > 0 ||
    (outcome.cutEvents ?? 0) > 0 ||
    (outcome.corruptBytes ?? 0) > 0 ||
    (outcome.corruptEvents ?? 0) > 0 ||
    outcome.summarySetAside === true;
  const details = {
    ...(outcome.tornBytes !== undefined && { tornBytes: outcome.tornBytes }),
    ...(outcome.cutEvents !== undefined && { cutEvents: outcome.cutEvents }),
    ...(outcome.corruptBytes !== undefined && { corruptBytes: outcome.corruptBytes }),
    ...(outcome.corruptEvents !== undefined && { corruptEvents: outcome.corruptEvents }),
    ...(outcome.summarySetAside === true && { summarySetAside: true }),
    quarantined: outcome.quarantined,
    events: outcome.eventCount,
  };
  if (changed) await auditLog(ctx).record('repaired', id, main.address.text, details);
  if (ctx.values.json) printJson(ctx.io, { id, repaired: changed, ...details });
  else if (!changed) print(ctx.io, `${id}: nothing to repair (${outcome.eventCount} events)`);
  else print(ctx.io, describeRepair(id, outcome));
  return EXIT_CODES.OK;
}

/** One line naming what a repair quarantined and where it went. */
function describeRepair(id: string, outcome: RepairOutcome): string {
  const parts = [
    (outcome.tornBytes ?? 0) > 0 ? `${outcome.tornBytes} torn byte(s)` : undefined,
    (outcome.cutEvents ?? 0) > 0 ? `${outcome.cutEvents} interrupted event(s)` : undefined,
    (outcome.corruptBytes ?? 0) > 0 ? `${outcome.corruptBytes} corrupt byte(s)` : undefined,
    (outcome.corruptEvents ?? 0) > 0
      ? `${outcome.corruptEvents} event(s) from the first damaged one on`
      : undefined,
    outcome.summarySetAside === true ? 'unreadable summary fields (tags, attrs)' : undefined,
  ].filter((x) => x !== undefined);
  return `${id}: quarantined ${parts.join(', ')}; ${outcome.eventCount} events kept${outcome.quarantined.length > 0 ? `; quarantine: ${outcome.quarantined.join(', ')}` : ''}`;
}
