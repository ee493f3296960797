// `tidemark verify`: the store's own read-only check of one session or the whole store, plus the
// sessions the audit log says the store holds and it does not.
import type { MaintenanceProblem } from '@tidemark/core';
import type { Backend } from '../backends.js';
import { auditLog, type Context, openLifecycleFor, openMain, print, printJson } from '../context.js';
import { CliError, EXIT_CODES } from '../exit-codes.js';
import { absent } from '../sessions.js';
import { withSpinner } from '../terminal.js';

/** One finding of `tidemark verify`, as `--json` prints it. */
export interface VerifyFinding {
  /**
   * A {@link MaintenanceProblem} kind, or `missing`: audited but missing from the store. All but
   * `interrupted` (a turn a crash cut short) mean damage.
   */
  kind: MaintenanceProblem['kind'] | 'missing';
  sessionId: string;
  message: string;
  /** File and byte offset, or table and row, and the seq concerned. */
  location?: { file?: string; offset?: number; bytes?: number; table?: string; row?: string; seq?: number };
}

/** Runs `tidemark verify [<id> | --all] [--json]`; exit 1 when damage is found. */
export async function runVerify(ctx: Context): Promise<number> {
  if (ctx.args.length > 1) throw new CliError('USAGE', 'verify takes at most one session id');
  const id = ctx.values.all ? undefined : ctx.args[0];
  const main = await openMain(ctx);
  if (id !== undefined && !(await main.store.has(id))) return absent(ctx, main, id);
  const report =
    id === undefined
      ? await withSpinner(ctx, `verifying ${main.address.text}`, () => main.store.verify())
      : await main.store.verify({ id });
  const findings = report.problems.map(findingOf);
  if (id === undefined) findings.push(...(await auditedButMissing(ctx, main)));
  const damaged = findings.filter((f) => f.kind !== 'interrupted');
  if (ctx.values.json) {
    printJson(ctx.io, {
      store: main.address.text,
      ok: damaged.length === 0,
      checked: report.checked,
      findings,
    });
  } else {
    for (const f of findings) {
      const where = f.location === undefined ? '' : ` at ${formatLocation(f.location)}`;
      const label = f.kind === 'interrupted' ? ctx.out.yellow(f.kind) : ctx.out.red(f.kind);
      print(ctx.io, `${label} ${f.sessionId}: ${f.message}${where}`);
    }
    const scope = id === undefined ? main.address.text : `session ${id}`;
    print(
      ctx.io,
      damaged.length === 0
        ? ctx.out.green(`ok: ${scope}`)
        : ctx.out.red(`damaged: ${damaged.length} finding(s) in ${scope}`),
    );
  }
  return damaged.length === 0 ? EXIT_CODES.OK : EXIT_CODES.PROBLEMS;
}

/** The location fields of a problem (file and byte offset, or table and row, and seq). */
export function locationOf(problem: MaintenanceProblem): NonNullable<VerifyFinding['location']> {
  const { file, offset, bytes, table, row, seq } = problem;
  return {
    ...(file !== undefined && { file }),
    ...(offset !== undefined && { offset }),
    ...(bytes !== undefined && { bytes }),
    ...(table !== undefined && { table }),
    ...(row !== undefined && { row }),
    ...(seq !== undefined && { seq }),
  };
}

/** A problem of the store's report, with its location fields gathered under `location`. */
function findingOf(problem: MaintenanceProblem): VerifyFinding {
  const { kind, sessionId, message } = problem;
  const location = locationOf(problem);
  return { kind, sessionId, message, ...(Object.keys(location).length > 0 && { location }) };
}

/** Sessions the audit log says this store holds, which it does not: losses to investigate. */
async function auditedButMissing(ctx: Context, main: Backend): Promise<VerifyFinding[]> {
  const { entries } = await auditLog(ctx).read();
  const candidates = new Set(entries.filter((e) => e.store === main.address.text).map((e) => e.id));
  if (candidates.size === 0) return [];
  const lifecycle = await openLifecycleFor(ctx, main);
  const findings: VerifyFinding[] = [];
  for (const candidate of [...candidates].sort()) {
    const where = await lifecycle.locate(candidate);
    if (where.status === 'audited-missing')
      findings.push({ kind: 'missing', sessionId: candidate, message: where.message });
  }
  return findings;
}

function formatLocation(location: NonNullable<VerifyFinding['location']>): string {
  return [
    location.file,
    location.offset !== undefined ? `byte ${location.offset}` : undefined,
    location.table,
    location.row,
    location.seq !== undefined ? `seq ${location.seq}` : undefined,
  ]
    .filter((x) => x !== undefined)
    .join(', ');
}
