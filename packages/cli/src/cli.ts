// The tidemark command line. Every command is a function of parsed arguments and an Io; `main`
// maps failures to one line on stderr and a distinct exit status.
import { spawn } from 'node:child_process';
import { lstat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  boundaryPredicate,
  commitStateOf,
  isENOENT,
  type ListProblem,
  type SessionEvent,
  type SessionStore,
  type SessionSummary,
  TidemarkError,
  toIoError,
} from '@tidemark/core';
import {
  type AuditEntry,
  AuditLog,
  copySession,
  type Lifecycle,
  openLifecycle,
  readTextIfExists,
  writeFileAtomic,
} from '@tidemark/lifecycle';
import { openMemoryStore } from '@tidemark/memory';
import { defaultStoreAddress, parseStoreAddress, type StoreAddress, tidemarkHome } from './address.js';
import {
  type Backend,
  openBackend,
  type RepairOutcome,
  type RepairRequest,
  type VerifyFinding,
  verifyByReading,
} from './backends.js';
import { encodeExportEvent, encodeExportHeader, parseExport } from './exchange.js';
import { CliError, describeFailure, EXIT_CODES } from './exit-codes.js';
import {
  age,
  LIST_HEADER,
  listRows,
  makeStyle,
  progressBar,
  renderTable,
  renderTimeline,
  type Style,
  truncate,
} from './format.js';
import { migrateSessions } from './migrate.js';

/** Where the CLI reads and writes: the process by default, buffers in tests. */
export interface Io {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  stdin: AsyncIterable<Buffer | string>;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** The config file `$TIDEMARK_HOME/config.json`. */
export interface CliConfig {
  /** Default store address. */
  store?: string;
  /** Trash store address. */
  trash?: string;
}

const USAGE = `Usage: tidemark [--store ADDRESS] <command> [options]

Commands:
  list [--cwd DIR] [--limit N] [--json]       sessions, newest first
  show <id> [--json]                          a readable timeline of one session
  delete <id>                                 move a session to the trash
  prune [--older-than DAYS] [--yes] [--json]  preview (default) or move old sessions to the trash
  trash list|restore <id>|purge [--dry-run]   the trash (purge only after the grace period)
  verify [<id> | --all] [--json]              check logs read-only; exit 1 when damage is found
  repair <id> [--cut-tail] [--drop-corrupt]   quarantine torn bytes (and the interrupted tail, a corrupt end)
  export <id>                                 JSONL on stdout: a header line, then the events
  import [--id ID]                            JSONL from stdin, as written by export
  migrate --from ADDRESS --to ADDRESS [--json] copy every session, verified and resumable
  active [<id>] [--cwd DIR]                   show or set the active session of a project
  config [--set-store ADDRESS]                show or change $TIDEMARK_HOME/config.json
  harness [args...]                           run the storage-fault harness (@tidemark/faults)

Stores: jsonl:DIR, sqlite:FILE, memory:, postgres://... (default jsonl:$TIDEMARK_HOME/sessions)
Exit codes: 0 ok, 1 problems found, 2 usage, 3 NOT_FOUND, 4 ALREADY_EXISTS, 5 CONFLICT,
  6 INVALID, 7 CORRUPT, 8 UNSUPPORTED_FORMAT, 9 IO, 10 CLOSED, 11 AUDITED_MISSING,
  12 UNAVAILABLE, 70 internal error`;

const OPTIONS = {
  store: { type: 'string' },
  trash: { type: 'string' },
  json: { type: 'boolean' },
  cwd: { type: 'string' },
  limit: { type: 'string' },
  all: { type: 'boolean' },
  yes: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  'older-than': { type: 'string' },
  'cut-tail': { type: 'boolean' },
  'drop-corrupt': { type: 'boolean' },
  from: { type: 'string' },
  to: { type: 'string' },
  id: { type: 'string' },
  'set-store': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

type Values = {
  [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'string' ? string : boolean;
};

interface Context {
  io: Io;
  values: Values;
  args: string[];
  home: string;
  out: Style;
  err: Style;
  config: CliConfig;
  /** Opened stores, closed by main. */
  opened: SessionStore[];
}

function print(io: Io, text: string): void {
  io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

function printJson(io: Io, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

function needId(ctx: Context, what: string): string {
  const id = ctx.args[0];
  if (id === undefined) throw new CliError('USAGE', `${what} needs a session id`);
  if (ctx.args.length > 1)
    throw new CliError('USAGE', `${what}: unexpected argument ${JSON.stringify(ctx.args[1])}`);
  return id;
}

/**
 * Largest number of days an option accepts (about 2700 years): far more, and the cutoff date of
 * `prune --older-than` falls outside what a Date can hold.
 */
const MAX_DAYS = 1_000_000;

/** A number of days from 0 to {@link MAX_DAYS} (an empty text is not 0). */
function days(text: string | undefined, name: string, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new CliError('USAGE', `${name} must be a non-negative number of days, got ${JSON.stringify(text)}`);
  if (n > MAX_DAYS)
    throw new CliError('USAGE', `${name} must be at most ${MAX_DAYS} days, got ${JSON.stringify(text)}`);
  return n;
}

function positiveInteger(text: string, name: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < 1)
    throw new CliError('USAGE', `${name} must be a positive integer, got ${JSON.stringify(text)}`);
  return n;
}

async function readConfig(home: string): Promise<CliConfig> {
  const file = join(home, 'config.json');
  const text = await readTextIfExists(file);
  if (text === undefined) return {};
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    const config = value as Record<string, unknown>;
    const out: CliConfig = {};
    if (typeof config.store === 'string') out.store = config.store;
    if (typeof config.trash === 'string') out.trash = config.trash;
    return out;
  } catch (error) {
    throw new TidemarkError('CORRUPT', `${file}: ${error instanceof Error ? error.message : String(error)}`, {
      location: { file },
    });
  }
}

function mainAddress(ctx: Context): StoreAddress {
  return parseStoreAddress(
    ctx.values.store ?? ctx.io.env.TIDEMARK_STORE ?? ctx.config.store ?? defaultStoreAddress(ctx.io.env),
    ctx.io.cwd,
  );
}

/**
 * Opens a store. With `mustExist`, a JSONL directory or SQLite file that is not there is
 * NOT_FOUND instead of being created empty: a mistyped source must not read as "no sessions".
 */
async function open(ctx: Context, address: StoreAddress, mustExist = false): Promise<Backend> {
  if (mustExist && (address.kind === 'jsonl' || address.kind === 'sqlite')) {
    const path = address.kind === 'jsonl' ? address.dir : address.file;
    try {
      await lstat(path);
    } catch (error) {
      if (isENOENT(error)) throw new CliError('NOT_FOUND', `store ${address.text} does not exist`);
      throw toIoError(error, `checking ${address.text}`);
    }
  }
  const backend = await openBackend(address);
  ctx.opened.push(backend.store);
  return backend;
}

async function openMain(ctx: Context): Promise<Backend> {
  return open(ctx, mainAddress(ctx));
}

/** The lifecycle of the main store; `moves` for the commands that move sessions in or out of the trash. */
async function openLifecycleFor(ctx: Context, main: Backend, moves = false): Promise<Lifecycle> {
  const trashText = ctx.values.trash ?? ctx.config.trash ?? defaultTrashAddress(ctx.home, main.address);
  const trashAddress = parseStoreAddress(trashText, ctx.io.cwd);
  // A trash that is the store itself would turn "move to the trash" into destruction (reading,
  // as `verify` of the trash store does, stays allowed).
  if (moves && trashAddress.kind !== 'memory' && trashAddress.text === main.address.text) {
    throw new CliError(
      'USAGE',
      `the trash ${trashAddress.text} is the store itself; pass another one with --trash ADDRESS`,
    );
  }
  const trash = await open(ctx, trashAddress);
  return openLifecycle({
    home: ctx.home,
    store: main.store,
    storeAddress: main.address.text,
    trash: trash.store,
    trashAddress: trash.address.text,
  });
}

/** The trash beside the main store, of the same kind: `jsonl:$TIDEMARK_HOME/trash`, `sqlite:$TIDEMARK_HOME/trash.db`. */
function defaultTrashAddress(home: string, main: StoreAddress): string {
  switch (main.kind) {
    case 'sqlite':
      return `sqlite:${join(home, 'trash.db')}`;
    case 'memory':
      return 'memory:';
    default:
      return `jsonl:${join(home, 'trash')}`;
  }
}

function auditLog(ctx: Context): AuditLog {
  return new AuditLog(ctx.home);
}

/** The summary of one session, through list (which reads no event logs). */
async function findSummary(store: SessionStore, id: string): Promise<SessionSummary | undefined> {
  let cursor: string | undefined;
  do {
    const page = await store.list({ limit: 1000, ...(cursor !== undefined && { cursor }) });
    const found = page.sessions.find((s) => s.id === id);
    if (found !== undefined) return found;
    const problem = page.problems.find((p) => p.id === id);
    if (problem !== undefined) throw problem.error;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return undefined;
}

/**
 * NOT_FOUND, or AUDITED_MISSING when the audit log says the session should be there. When the
 * trash cannot be opened, the audit log alone still tells AUDITED_MISSING; otherwise the session
 * may be in that trash, and the failure to open it is the answer, never "does not exist".
 */
async function absent(ctx: Context, main: Backend, id: string): Promise<never> {
  let lifecycle: Lifecycle;
  try {
    lifecycle = await openLifecycleFor(ctx, main);
  } catch (error) {
    throw await auditedMissingWithoutTrash(ctx, main, id, error);
  }
  const where = await lifecycle.locate(id);
  if (where.status === 'audited-missing') throw new CliError('AUDITED_MISSING', where.message);
  if (where.status === 'trashed') {
    throw new TidemarkError(
      'NOT_FOUND',
      `session ${id} is in the trash since ${where.entry.trashedAt} (tidemark trash restore ${id})`,
      {
        sessionId: id,
      },
    );
  }
  if (where.status === 'removed') {
    throw new TidemarkError(
      'NOT_FOUND',
      `session ${id} was ${where.lastEntry.action} at ${where.lastEntry.time}`,
      { sessionId: id },
    );
  }
  throw new TidemarkError('NOT_FOUND', `session ${id} does not exist in ${main.address.text}`, {
    sessionId: id,
  });
}

/**
 * What {@link absent} says when the trash cannot be opened (`trashError`): AUDITED_MISSING when
 * the audit log's last entry for this store is not a removal (a move to the trash is recorded
 * before the session leaves the store), else `trashError` itself.
 */
async function auditedMissingWithoutTrash(
  ctx: Context,
  main: Backend,
  id: string,
  trashError: unknown,
): Promise<unknown> {
  let history: AuditEntry[];
  try {
    history = await auditLog(ctx).history(id, main.address.text);
  } catch {
    return trashError;
  }
  const last = history[history.length - 1];
  if (last === undefined || last.action === 'deleted' || last.action === 'pruned' || last.action === 'purged')
    return trashError;
  return new CliError(
    'AUDITED_MISSING',
    `session ${id}: audited but missing from ${main.address.text} (last audit entry: ${last.action} at ${last.time}; ` +
      `the trash could not be checked: ${describeFailure(trashError).message})`,
  );
}

async function readEvents(store: SessionStore, id: string): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  for await (const event of store.read(id)) events.push(event);
  return events;
}

// ── commands ────────────────────────────────────────────────────────────────────────────────

async function cmdList(ctx: Context): Promise<number> {
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

async function cmdShow(ctx: Context): Promise<number> {
  const id = needId(ctx, 'show');
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

async function cmdDelete(ctx: Context): Promise<number> {
  const id = needId(ctx, 'delete');
  const main = await openMain(ctx);
  if (!(await main.store.has(id))) return absent(ctx, main, id);
  const lifecycle = await openLifecycleFor(ctx, main, true);
  const entry = await lifecycle.delete(id);
  if (ctx.values.json) printJson(ctx.io, entry ?? { id, removed: true, empty: true });
  else if (entry === undefined)
    print(
      ctx.io,
      `removed ${id}: it had no events, so there was nothing for the trash to keep (its title and tags are in the audit log)`,
    );
  else
    print(
      ctx.io,
      `moved ${id} to the trash; restorable until ${entry.purgeAfter} (tidemark trash restore ${id})`,
    );
  return EXIT_CODES.OK;
}

async function cmdPrune(ctx: Context): Promise<number> {
  const main = await openMain(ctx);
  const lifecycle = await openLifecycleFor(ctx, main, true);
  const olderThanDays = days(ctx.values['older-than'], '--older-than', 30);
  const report = await lifecycle.prune({ olderThanDays, dryRun: ctx.values.yes !== true });
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

async function cmdTrash(ctx: Context): Promise<number> {
  const [sub, ...rest] = ctx.args;
  const main = await openMain(ctx);
  const lifecycle = await openLifecycleFor(ctx, main, true);
  switch (sub) {
    case undefined:
    case 'list': {
      const { entries, problems } = await lifecycle.trashListing();
      if (ctx.values.json) printJson(ctx.io, entries);
      else if (entries.length === 0) {
        // Not "empty" when it holds sessions it could not describe (reported below).
        if (problems.length === 0) print(ctx.io, 'the trash is empty');
      } else
        print(
          ctx.io,
          renderTable(
            ['ID', 'TRASHED', 'REASON', 'PURGE AFTER', 'EVENTS', 'TITLE'].map((h) => ctx.out.bold(h)),
            entries.map((e) => [
              e.id,
              e.trashedAt,
              e.reason,
              e.purgeAfter,
              String(e.summary.eventCount),
              truncate(e.summary.title ?? e.summary.firstPrompt ?? '', 40),
            ]),
          ),
        );
      reportTrashProblems(ctx, problems);
      return problems.length > 0 ? EXIT_CODES.PROBLEMS : EXIT_CODES.OK;
    }
    case 'restore': {
      const id = rest[0];
      if (id === undefined || rest.length > 1)
        throw new CliError('USAGE', 'trash restore needs exactly one session id');
      const summary = await lifecycle.restore(id);
      if (ctx.values.json) printJson(ctx.io, summary);
      else print(ctx.io, `restored ${id} (${summary.eventCount} events) to ${main.address.text}`);
      return EXIT_CODES.OK;
    }
    case 'purge': {
      if (ctx.values['dry-run']) {
        const now = new Date();
        const { entries, problems } = await lifecycle.trashListing();
        const due = entries.filter((e) => Date.parse(e.purgeAfter) <= now.getTime());
        if (ctx.values.json) printJson(ctx.io, { dryRun: true, wouldPurge: due.map((e) => e.id) });
        else
          print(
            ctx.io,
            `would purge ${due.length} session(s) past their grace period${due.map((e) => `\n  ${e.id}`).join('')}`,
          );
        reportTrashProblems(ctx, problems);
        return problems.length > 0 ? EXIT_CODES.PROBLEMS : EXIT_CODES.OK;
      }
      const report = await lifecycle.purge();
      if (ctx.values.json)
        printJson(ctx.io, {
          purged: report.purged,
          kept: report.kept.map((e) => ({ id: e.id, purgeAfter: e.purgeAfter })),
          problems: report.problems.map((p) => ({ id: p.id, error: p.error.toJSON() })),
        });
      else
        print(
          ctx.io,
          `purged ${report.purged.length} session(s); ${report.kept.length} still within their grace period`,
        );
      reportTrashProblems(ctx, report.problems);
      return report.problems.length > 0 ? EXIT_CODES.PROBLEMS : EXIT_CODES.OK;
    }
    default:
      throw new CliError('USAGE', `trash: unknown subcommand ${JSON.stringify(sub)} (list, restore, purge)`);
  }
}

/** Trashed sessions the trash store could not describe: on stderr, never left out silently. */
function reportTrashProblems(ctx: Context, problems: readonly ListProblem[]): void {
  for (const p of problems)
    ctx.io.stderr.write(`${ctx.err.red('problem')}: ${p.id}: ${p.error.code}: ${p.error.message}\n`);
}

async function cmdVerify(ctx: Context): Promise<number> {
  if (ctx.args.length > 1) throw new CliError('USAGE', 'verify takes at most one session id');
  const id = ctx.values.all ? undefined : ctx.args[0];
  const main = await openMain(ctx);
  if (id !== undefined && !(await main.store.has(id))) return absent(ctx, main, id);
  const findings: VerifyFinding[] =
    main.verify !== undefined ? await main.verify(id) : await verifyByReading(main.store, id);
  if (id === undefined) findings.push(...(await auditedButMissing(ctx, main)));
  const damaged = findings.filter((f) => f.kind !== 'interrupted');
  if (ctx.values.json) {
    printJson(ctx.io, { store: main.address.text, ok: damaged.length === 0, findings });
  } else {
    for (const f of findings) {
      const where = f.location === undefined ? '' : ` at ${formatLocation(f.location)}`;
      const label = f.kind === 'interrupted' ? ctx.out.yellow(f.kind) : ctx.out.red(f.kind);
      print(ctx.io, `${label} ${f.sessionId ?? '-'}: ${f.message}${where}`);
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

async function cmdRepair(ctx: Context): Promise<number> {
  const id = needId(ctx, 'repair');
  const main = await openMain(ctx);
  if (!(await main.store.has(id))) return absent(ctx, main, id);
  const request: RepairRequest = {
    tail: ctx.values['cut-tail'] ? 'cut' : 'keep',
    dropCorrupt: ctx.values['drop-corrupt'] === true,
  };
  let outcome: RepairOutcome;
  if (main.repair !== undefined) outcome = await main.repair(id, request);
  else {
    if (request.dropCorrupt)
      throw new CliError('UNAVAILABLE', `--drop-corrupt is not supported by ${main.address.text}`);
    // Portable repair: load applies the store's own recovery (torn fragments quarantined, and
    // the interrupted tail too with tail 'cut').
    const loaded = await main.store.load(id, { tail: request.tail });
    outcome = { quarantined: [], eventCount: loaded.events.length };
    const r = loaded.recovered;
    if (r?.tornBytes !== undefined) outcome.tornBytes = r.tornBytes;
    if (r?.cutEvents !== undefined) outcome.cutEvents = r.cutEvents;
    if (r?.quarantinedAt !== undefined) outcome.quarantined.push(r.quarantinedAt);
  }
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
  else {
    const parts = [
      (outcome.tornBytes ?? 0) > 0 ? `${outcome.tornBytes} torn byte(s)` : undefined,
      (outcome.cutEvents ?? 0) > 0 ? `${outcome.cutEvents} interrupted event(s)` : undefined,
      (outcome.corruptBytes ?? 0) > 0 ? `${outcome.corruptBytes} corrupt byte(s)` : undefined,
      (outcome.corruptEvents ?? 0) > 0
        ? `${outcome.corruptEvents} event(s) from the first damaged one on`
        : undefined,
      outcome.summarySetAside === true ? 'unreadable summary fields (tags, attrs)' : undefined,
    ].filter((x) => x !== undefined);
    print(
      ctx.io,
      `${id}: quarantined ${parts.join(', ')}; ${outcome.eventCount} events kept${outcome.quarantined.length > 0 ? `; quarantine: ${outcome.quarantined.join(', ')}` : ''}`,
    );
  }
  return EXIT_CODES.OK;
}

async function cmdExport(ctx: Context): Promise<number> {
  const id = needId(ctx, 'export');
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

async function cmdImport(ctx: Context): Promise<number> {
  if (ctx.args.length > 0)
    throw new CliError('USAGE', 'import reads the export from stdin and takes no arguments');
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  let text: string;
  try {
    // Strict: bytes that are not UTF-8 are bad input, never silently stored as U+FFFD.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new TidemarkError('INVALID', 'import: the input is not valid UTF-8');
  }
  const parsed = parseExport(text);
  const id = ctx.values.id ?? parsed.header.meta.id;
  if (parsed.events.length === 0)
    throw new TidemarkError(
      'INVALID',
      'import: the export holds no events (its session was emptied by a tail cut or a repair); a store holds a session only from its first event, so there is nothing to import',
    );
  // Stage the parsed session in a memory store, then copy it like migrate does: same
  // verification, and a cut-short import continues where it stopped.
  const staging = await openMemoryStore();
  const { meta, summary } = parsed.header;
  await staging.create({
    id,
    // The original creation time, as every other copy keeps it (validated by create).
    ...(meta.createdAt !== undefined && { createdAt: meta.createdAt }),
    ...(meta.cwd !== undefined && { cwd: meta.cwd }),
    ...(meta.parent !== undefined && { parent: meta.parent }),
    ...(summary.title !== undefined && { title: summary.title }),
    ...(summary.tags !== undefined && { tags: summary.tags }),
  });
  await staging.update(id, {
    ...(summary.firstPrompt !== undefined && { firstPrompt: summary.firstPrompt }),
    ...(summary.attrs !== undefined && { attrs: summary.attrs }),
  });
  await staging.append(id, parsed.events);
  const main = await openMain(ctx);
  const result = await copySession(staging, main.store, id);
  await auditLog(ctx).record('imported', id, main.address.text, {
    events: result.events,
    hash: result.hash,
    originalId: meta.id,
    originalCreatedAt: meta.createdAt,
  });
  if (ctx.values.json) printJson(ctx.io, result);
  else
    print(
      ctx.io,
      `imported ${id}: ${result.events} events (${result.outcome}), sha256 ${result.hash.slice(0, 16)}…`,
    );
  return EXIT_CODES.OK;
}

async function cmdMigrate(ctx: Context): Promise<number> {
  if (ctx.values.from === undefined || ctx.values.to === undefined)
    throw new CliError('USAGE', 'migrate needs --from ADDRESS and --to ADDRESS');
  const fromAddress = parseStoreAddress(ctx.values.from, ctx.io.cwd);
  const toAddress = parseStoreAddress(ctx.values.to, ctx.io.cwd);
  if (fromAddress.text === toAddress.text)
    throw new CliError('USAGE', 'migrate: --from and --to are the same store');
  const from = await open(ctx, fromAddress, true);
  const to = await open(ctx, toAddress);
  const audit = auditLog(ctx);
  const tty = ctx.io.stderr.isTTY === true;
  const { ids, results, failed, problems, missing, unverified } = await migrateSessions(
    from.store,
    to.store,
    {
      onProgress: (done, total, id) => {
        if (!tty) return;
        if (id !== undefined)
          ctx.io.stderr.write(`\r${progressBar(done, total, `sessions  ${truncate(id, 24)}`)}\u001b[K`);
        else ctx.io.stderr.write(`\r${progressBar(done, total, 'sessions')}\u001b[K\n`);
      },
      onCopied: async (result) => {
        await audit.record('migrated', result.id, toAddress.text, {
          from: fromAddress.text,
          events: result.events,
          hash: result.hash,
        });
      },
    },
  );
  const totalEvents = results.reduce((sum, r) => sum + r.events, 0);
  const counts = {
    sessions: ids.length,
    copied: results.filter((r) => r.outcome === 'copied').length,
    resumed: results.filter((r) => r.outcome === 'resumed').length,
    alreadyComplete: results.filter((r) => r.outcome === 'complete').length,
    events: totalEvents,
  };
  const ok = failed.length === 0 && problems.length === 0 && missing.length === 0 && unverified.length === 0;
  if (ctx.values.json) {
    printJson(ctx.io, {
      from: fromAddress.text,
      to: toAddress.text,
      ok,
      ...counts,
      failed,
      problems,
      missing,
      unverified,
      sessionsDetail: results.map(({ id, outcome, events, appended, hash }) => ({
        id,
        outcome,
        events,
        appended,
        hash,
      })),
    });
  } else {
    print(
      ctx.io,
      // Only what was copied and verified counts as migrated; failures are listed below.
      `migrated ${results.length === ids.length ? '' : `${results.length} of `}${counts.sessions} session(s), ` +
        `${counts.events} events from ${fromAddress.text} to ${toAddress.text}: ` +
        `${counts.copied} copied, ${counts.resumed} resumed, ${counts.alreadyComplete} already complete; verified by sha256`,
    );
    for (const f of failed)
      ctx.io.stderr.write(`${ctx.err.red('failed')}: ${f.id}: ${f.code}: ${f.message}\n`);
    for (const p of problems)
      ctx.io.stderr.write(`${ctx.err.red('unreadable in source')}: ${p.id}: ${p.code}: ${p.message}\n`);
    for (const m of missing) ctx.io.stderr.write(`${ctx.err.red('verification failed')}: ${m}\n`);
    for (const u of unverified)
      ctx.io.stderr.write(`${ctx.err.red('verification failed')}: ${u.id}: ${u.code}: ${u.message}\n`);
  }
  return ok ? EXIT_CODES.OK : EXIT_CODES.PROBLEMS;
}

async function cmdActive(ctx: Context): Promise<number> {
  const main = await openMain(ctx);
  const lifecycle = await openLifecycleFor(ctx, main);
  const cwd = ctx.values.cwd ?? ctx.io.cwd;
  const id = ctx.args[0];
  if (id !== undefined) {
    if (!(await main.store.has(id))) return absent(ctx, main, id);
    await lifecycle.setActive(cwd, id);
  }
  const active = await lifecycle.getActive(cwd);
  if (ctx.values.json) printJson(ctx.io, { cwd, active: active ?? null });
  else
    print(ctx.io, active === undefined ? `no active session for ${cwd}` : `${active}  (active for ${cwd})`);
  return EXIT_CODES.OK;
}

async function cmdConfig(ctx: Context): Promise<number> {
  const set = ctx.values['set-store'];
  if (set !== undefined) {
    const address = parseStoreAddress(set, ctx.io.cwd);
    // Resolved where it was typed: a relative path kept as is would name another (new, empty)
    // store in every other directory. A postgres URL is kept whole (its text hides the password).
    ctx.config = { ...ctx.config, store: address.kind === 'postgres' ? address.url : address.text };
    await writeFileAtomic(join(ctx.home, 'config.json'), `${JSON.stringify(ctx.config, null, 2)}\n`);
  }
  const effective = { home: ctx.home, store: mainAddress(ctx).text, file: ctx.config };
  if (ctx.values.json) printJson(ctx.io, effective);
  else print(ctx.io, `home  ${effective.home}\nstore ${effective.store}`);
  return EXIT_CODES.OK;
}

async function cmdHarness(ctx: Context, rawArgs: string[]): Promise<number> {
  let bin: string;
  try {
    const require = createRequire(import.meta.url);
    bin = join(dirname(require.resolve('@tidemark/faults/package.json')), 'dist', 'bin.js');
  } catch {
    throw new CliError('UNAVAILABLE', 'the fault harness (@tidemark/faults) is not installed');
  }
  const { access } = await import('node:fs/promises');
  try {
    await access(bin);
  } catch {
    throw new CliError('UNAVAILABLE', `the fault harness is not built (${bin} is missing; run pnpm build)`);
  }
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [bin, ...rawArgs], { stdio: 'inherit', env: ctx.io.env });
    child.on('error', (error) =>
      reject(new CliError('UNAVAILABLE', `cannot start the fault harness: ${error.message}`)),
    );
    child.on('exit', (code, signal) =>
      resolvePromise(code ?? (signal !== null ? 128 + 9 : EXIT_CODES.INTERNAL)),
    );
  });
}

const COMMANDS: Record<string, (ctx: Context) => Promise<number>> = {
  list: cmdList,
  show: cmdShow,
  delete: cmdDelete,
  prune: cmdPrune,
  trash: cmdTrash,
  verify: cmdVerify,
  repair: cmdRepair,
  export: cmdExport,
  import: cmdImport,
  migrate: cmdMigrate,
  active: cmdActive,
  config: cmdConfig,
};

/**
 * Runs the CLI with `argv` (without `node` and the script) and returns the exit status. Expected
 * failures print `tidemark: <CODE>: message` on one line; only unexpected ones print a stack,
 * and only with `TIDEMARK_DEBUG` set.
 */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  const opened: SessionStore[] = [];
  const errStyle = makeStyle(io.stderr.isTTY === true, io.env);
  try {
    // `harness` passes its own options through untouched to the harness binary.
    if (argv[0] === 'harness') {
      const ctx = await makeContext(io, {}, [], opened);
      return await cmdHarness(ctx, argv.slice(1));
    }
    let parsed: ReturnType<
      typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>
    >;
    try {
      parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
    } catch (error) {
      throw new CliError(
        'USAGE',
        `${error instanceof Error ? error.message : String(error)} (tidemark --help)`,
      );
    }
    const values = parsed.values as Values;
    const [command, ...args] = parsed.positionals;
    if (values.version) {
      print(io, '0.1.0');
      return EXIT_CODES.OK;
    }
    if (values.help || command === 'help') {
      print(io, USAGE);
      return EXIT_CODES.OK;
    }
    if (command === undefined) {
      io.stderr.write(`${USAGE}\n`);
      return EXIT_CODES.USAGE;
    }
    const run = COMMANDS[command];
    if (run === undefined)
      throw new CliError('USAGE', `unknown command ${JSON.stringify(command)} (tidemark --help)`);
    const ctx = await makeContext(io, values, args, opened);
    return await run(ctx);
  } catch (error) {
    const { code, message, expected } = describeFailure(error);
    io.stderr.write(`tidemark: ${errStyle.red(code)}: ${message}\n`);
    if (!expected && io.env.TIDEMARK_DEBUG)
      io.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    return EXIT_CODES[code];
  } finally {
    for (const store of opened.reverse()) await store.close().catch(() => undefined);
  }
}

async function makeContext(io: Io, values: Values, args: string[], opened: SessionStore[]): Promise<Context> {
  const home = tidemarkHome(io.env);
  return {
    io,
    values,
    args,
    home,
    out: makeStyle(io.stdout.isTTY === true, io.env),
    err: makeStyle(io.stderr.isTTY === true, io.env),
    config: await readConfig(home),
    opened,
  };
}
