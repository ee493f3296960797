// `tidemark repair`: the store's own repair of one session (torn bytes, and on request the
// interrupted tail or a corrupt end go to quarantine); audits what it took out and says so.
import { type JsonValue, type RepairReport, type SessionHealth, TidemarkError } from '@tidemark/core';
import { auditLog, type Context, openMain, print, printJson } from '../context.js';
import { EXIT_CODES } from '../exit-codes.js';
import { needId } from '../options.js';
import { absent } from '../sessions.js';
import { locationOf } from './verify.js';

/** Runs `tidemark repair <id> [--cut-tail] [--drop-corrupt]`. */
export async function runRepair(ctx: Context): Promise<number> {
  const id = needId(ctx.args, 'repair');
  const main = await openMain(ctx);
  if (!(await main.store.has(id))) return absent(ctx, main, id);
  const dropCorrupt = ctx.values['drop-corrupt'] === true;
  if (!dropCorrupt) refuseDamage(id, (await main.store.verify({ id })).sessions[0]);
  const report = await main.store.repair(id, { tail: ctx.values['cut-tail'] ? 'cut' : 'keep', dropCorrupt });
  const changed =
    report.removed.length > 0 ||
    (report.tornBytes ?? 0) > 0 ||
    (report.cutEvents ?? 0) > 0 ||
    (report.corruptBytes ?? 0) > 0 ||
    (report.corruptEvents ?? 0) > 0 ||
    report.summarySetAside === true;
  const details = repairDetails(report);
  if (changed) await auditLog(ctx).record('repaired', id, main.address.text, details);
  if (ctx.values.json) printJson(ctx.io, { id, repaired: changed, ...details });
  else if (!changed) print(ctx.io, `${id}: nothing to repair (${report.eventCount} events)`);
  else print(ctx.io, describeRepair(id, report));
  return EXIT_CODES.OK;
}

/**
 * Without `--drop-corrupt`, a corrupt session (or one of a newer format) is refused before
 * anything is removed: a repair may only take out what the user asked for, and "nothing to
 * repair" would hide the damage. The error names where it is and what removes it.
 */
function refuseDamage(id: string, health: SessionHealth | undefined): void {
  const problem = health?.problems.find((p) => p.kind === 'corrupt' || p.kind === 'unsupported-format');
  if (problem === undefined) return;
  const { bytes: _, ...location } = locationOf(problem);
  if (problem.kind === 'unsupported-format')
    throw new TidemarkError('UNSUPPORTED_FORMAT', problem.message, { sessionId: id, location });
  throw new TidemarkError(
    'CORRUPT',
    `${problem.message}; \`tidemark repair ${id} --drop-corrupt\` moves everything from the first damaged event on to quarantine`,
    { sessionId: id, location },
  );
}

/** What the audit log and `--json` record of a repair: the counts, and each thing taken out. */
function repairDetails(report: RepairReport): { [key: string]: JsonValue } {
  return {
    ...(report.tornBytes !== undefined && { tornBytes: report.tornBytes }),
    ...(report.cutEvents !== undefined && { cutEvents: report.cutEvents }),
    ...(report.corruptBytes !== undefined && { corruptBytes: report.corruptBytes }),
    ...(report.corruptEvents !== undefined && { corruptEvents: report.corruptEvents }),
    ...(report.summarySetAside === true && { summarySetAside: true }),
    removed: report.removed.map(({ sessionId: _, ...rest }) => ({ ...rest })),
    quarantined: report.quarantined,
    events: report.eventCount,
  };
}

/** One line naming what a repair quarantined and where it went. */
function describeRepair(id: string, report: RepairReport): string {
  const parts = [
    (report.tornBytes ?? 0) > 0 ? `${report.tornBytes} torn byte(s)` : undefined,
    (report.cutEvents ?? 0) > 0 ? `${report.cutEvents} interrupted event(s)` : undefined,
    (report.corruptBytes ?? 0) > 0 ? `${report.corruptBytes} corrupt byte(s)` : undefined,
    (report.corruptEvents ?? 0) > 0
      ? `${report.corruptEvents} event(s) from the first damaged one on`
      : undefined,
    report.summarySetAside === true ? 'unreadable summary fields (tags, attrs)' : undefined,
  ].filter((x) => x !== undefined);
  if (parts.length === 0) parts.push(report.removed.map((p) => p.kind).join(', '));
  const quarantine = report.quarantined.length > 0 ? `; quarantine: ${report.quarantined.join(', ')}` : '';
  return `${id}: quarantined ${parts.join(', ')}; ${report.eventCount} events kept${quarantine}`;
}
