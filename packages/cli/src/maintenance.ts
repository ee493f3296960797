// Checking and repairing stores: the one place that knows the shapes of the backends' own
// verify and repair functions and adapts them to what `tidemark verify` and `repair` print,
// with portable fallbacks (reading, loading) for a backend that offers none. To be replaced by
// the core maintenance interface (`store.verify()`, `store.repair()`) once every backend has it.
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import {
  boundaryPredicate,
  commitStateOf,
  isENOENT,
  type SessionEvent,
  type SessionStore,
  TidemarkError,
  toIoError,
} from '@tidemark/core';
import type { StoreAddress } from './address.js';
import { CliError } from './exit-codes.js';
import type { Maintenance, RepairOutcome, RepairRequest, VerifyFinding } from './maintenance-types.js';
import { verifyByReading } from './verify-by-reading.js';

export type { Maintenance, RepairOutcome, RepairRequest, VerifyFinding } from './maintenance-types.js';

/** A store with its maintenance functions, as `openBackend` returns it. */
interface MaintainedStore extends Maintenance {
  address: StoreAddress;
  store: SessionStore;
}

/** `tidemark verify`: the backend's own check, else {@link verifyByReading}. */
export async function verifyBackend(backend: MaintainedStore, id?: string): Promise<VerifyFinding[]> {
  return backend.verify !== undefined ? backend.verify(id) : verifyByReading(backend.store, id);
}

/**
 * `tidemark repair`: the backend's own repair, else the portable one through `load`, which
 * applies the store's own recovery (torn fragments quarantined, and the interrupted tail too
 * with tail 'cut'); a corrupt end cannot be dropped that way, so `dropCorrupt` is UNAVAILABLE.
 */
export async function repairBackend(
  backend: MaintainedStore,
  id: string,
  request: RepairRequest,
): Promise<RepairOutcome> {
  if (backend.repair !== undefined) return backend.repair(id, request);
  if (request.dropCorrupt)
    throw new CliError('UNAVAILABLE', `--drop-corrupt is not supported by ${backend.address.text}`);
  const loaded = await backend.store.load(id, { tail: request.tail });
  const outcome: RepairOutcome = { quarantined: [], eventCount: loaded.events.length };
  const r = loaded.recovered;
  if (r?.tornBytes !== undefined) outcome.tornBytes = r.tornBytes;
  if (r?.cutEvents !== undefined) outcome.cutEvents = r.cutEvents;
  if (r?.quarantinedAt !== undefined) outcome.quarantined.push(r.quarantinedAt);
  return outcome;
}

// ── JSONL ───────────────────────────────────────────────────────────────────────────────────

interface JsonlVerifyReport {
  id: string;
  path: string;
  status: 'ok' | 'interrupted' | 'torn' | 'corrupt' | 'unsupported-format';
  eventCount: number;
  committedSeq: number;
  interrupted: boolean;
  torn?: { offset: number; length: number; reason: string };
  problem?: { kind: string; offset: number; seq?: number; message: string };
}

interface JsonlStoreShape extends SessionStore {
  verify?: (id: string) => Promise<JsonlVerifyReport>;
  repair?: (
    id: string,
    options: { tail?: 'keep' | 'cut'; dropCorrupt?: boolean },
  ) => Promise<{
    tornBytes?: number;
    cutEvents?: number;
    corruptBytes?: number;
    quarantinedAt?: string;
    quarantined: string[];
    eventCount: number;
  }>;
}

interface ScanShape {
  torn?: { offset: number; length: number; reason: string };
  problem?: { kind: string; offset: number; seq?: number; message: string };
  batches: { events: SessionEvent[] }[];
}

/**
 * Maintenance of a JSONL store (`module` is `@tidemark/jsonl`): the store's own `verify` and
 * `repair` when it has them, else a read-only check with the package's log scanner.
 */
export function jsonlMaintenance(
  module: Record<string, unknown>,
  root: string,
  opened: SessionStore,
): Maintenance {
  const store = opened as JsonlStoreShape;
  const { verify, repair } = store;
  const maintenance: Maintenance = {};
  if (typeof verify === 'function') {
    // The backend's own read-only check: torn tails and corruption with byte offsets.
    maintenance.verify = (id) => verifyJsonlByReports((each) => verify.call(store, each), store, id);
  } else {
    maintenance.verify = (id) => verifyJsonlByScanning(module, root, store, id);
  }
  if (typeof repair === 'function') {
    maintenance.repair = async (id, request) => {
      const done = await repair.call(store, id, { tail: request.tail, dropCorrupt: request.dropCorrupt });
      const outcome: RepairOutcome = { quarantined: done.quarantined, eventCount: done.eventCount };
      if (done.tornBytes !== undefined) outcome.tornBytes = done.tornBytes;
      if (done.cutEvents !== undefined) outcome.cutEvents = done.cutEvents;
      if (done.corruptBytes !== undefined) outcome.corruptBytes = done.corruptBytes;
      return outcome;
    };
  }
  return maintenance;
}

/**
 * One session, or every session `list` knows, through the store's report of one session; with
 * every session, one that cannot be verified is a finding instead of failing the whole check.
 */
async function verifyJsonlByReports(
  verifyOne: (id: string) => Promise<JsonlVerifyReport>,
  store: SessionStore,
  id?: string,
): Promise<VerifyFinding[]> {
  const ids = id === undefined ? await allIds(store) : [id];
  const findings: VerifyFinding[] = [];
  for (const each of ids) {
    try {
      findings.push(...findingsOfJsonlReport(await verifyOne(each)));
    } catch (error) {
      const typed = toIoError(error, `verifying ${each}`, each);
      if (id !== undefined) throw typed;
      findings.push({
        kind: typed.code === 'CORRUPT' ? 'corrupt' : 'problem',
        sessionId: each,
        message: `${typed.code}: ${typed.message}`,
        ...(typed.location !== undefined && { location: typed.location }),
      });
    }
  }
  return findings;
}

/** Ids of every session `list` knows, including the ones it could only report as problems. */
async function allIds(store: SessionStore): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list({ limit: 1000, ...(cursor !== undefined && { cursor }) });
    ids.push(...page.sessions.map((s) => s.id));
    for (const problem of page.problems) ids.push(problem.id);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return [...new Set(ids)].sort();
}

function findingsOfJsonlReport(report: JsonlVerifyReport): VerifyFinding[] {
  const out: VerifyFinding[] = [];
  const file = report.path;
  if (report.problem !== undefined) {
    out.push({
      kind: report.problem.kind === 'unsupported-format' ? 'unsupported-format' : 'corrupt',
      sessionId: report.id,
      message: report.problem.message,
      location: {
        file,
        offset: report.problem.offset,
        ...(report.problem.seq !== undefined && { seq: report.problem.seq }),
      },
    });
  }
  if (report.torn !== undefined) {
    out.push({
      kind: 'torn',
      sessionId: report.id,
      message: `torn tail of ${report.torn.length} byte(s) (${report.torn.reason}); \`tidemark repair ${report.id}\` quarantines it`,
      location: { file, offset: report.torn.offset },
    });
  }
  if (report.interrupted) {
    out.push({
      kind: 'interrupted',
      sessionId: report.id,
      message: `interrupted turn: ${report.eventCount - 1 - report.committedSeq} event(s) after the last boundary (seq ${report.committedSeq})`,
      location: { file, seq: report.committedSeq + 1 },
    });
  }
  return out;
}

/**
 * Read-only check of JSONL logs with the backend's own scanner (`scanLog`): torn tails,
 * corruption with byte offsets, interrupted turns. Never writes, so it reports a torn tail that a
 * `load` would repair. Falls back to the read-based check when the scanner is not exported.
 */
async function verifyJsonlByScanning(
  module: Record<string, unknown>,
  root: string,
  store: SessionStore,
  id?: string,
): Promise<VerifyFinding[]> {
  const scanLog = module.scanLog;
  if (typeof scanLog !== 'function') return verifyByReading(store, id);
  const findings: VerifyFinding[] = [];
  let buckets: string[];
  try {
    buckets = (await fsp.readdir(root, { withFileTypes: true }))
      .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
      .map((d) => d.name);
  } catch (error) {
    if (isENOENT(error)) return findings;
    throw toIoError(error, `reading ${root}`);
  }
  let seen = 0;
  for (const bucket of buckets) {
    const dir = join(root, bucket);
    let names: string[];
    try {
      names = (await fsp.readdir(dir)).filter((n) => n.endsWith('.jsonl'));
    } catch (error) {
      throw toIoError(error, `reading ${dir}`);
    }
    for (const name of names) {
      const sessionId = name.slice(0, -'.jsonl'.length);
      if (id !== undefined && sessionId !== id) continue;
      seen++;
      findings.push(
        ...(await scanJsonlFile(scanLog as (bytes: Uint8Array) => ScanShape, join(dir, name), sessionId)),
      );
    }
  }
  if (id !== undefined && seen === 0) return verifyByReading(store, id);
  return findings;
}

/** The findings of one log file, scanned with `scanLog`. */
async function scanJsonlFile(
  scanLog: (bytes: Uint8Array) => ScanShape,
  file: string,
  sessionId: string,
): Promise<VerifyFinding[]> {
  let bytes: Uint8Array;
  try {
    bytes = await fsp.readFile(file);
  } catch (error) {
    return [
      {
        kind: 'problem',
        sessionId,
        message: toIoError(error, `reading ${file}`).message,
        location: { file },
      },
    ];
  }
  const scan = scanLog(bytes);
  if (scan.problem !== undefined) {
    return [
      {
        kind: scan.problem.kind === 'unsupported-format' ? 'unsupported-format' : 'corrupt',
        sessionId,
        message: scan.problem.message,
        location: {
          file,
          offset: scan.problem.offset,
          ...(scan.problem.seq !== undefined && { seq: scan.problem.seq }),
        },
      },
    ];
  }
  const findings: VerifyFinding[] = [];
  if (scan.torn !== undefined) {
    findings.push({
      kind: 'torn',
      sessionId,
      message: `torn tail of ${scan.torn.length} byte(s) (${scan.torn.reason}); the next load quarantines it`,
      location: { file, offset: scan.torn.offset },
    });
  }
  const events = scan.batches.flatMap((b) => b.events);
  const state = commitStateOf(events, boundaryPredicate());
  if (state.interrupted) {
    findings.push({
      kind: 'interrupted',
      sessionId,
      message: `interrupted turn: ${events.length - 1 - state.committedSeq} event(s) after the last boundary (seq ${state.committedSeq})`,
      location: { file, seq: state.committedSeq + 1 },
    });
  }
  return findings;
}

// ── SQLite ──────────────────────────────────────────────────────────────────────────────────

interface SqliteProblemShape {
  kind: string;
  message: string;
  sessionId?: string;
  location: VerifyFinding['location'];
}

interface SqliteRepairShape {
  repaired: {
    sessionId: string;
    keptEvents: number;
    quarantinedEvents: number;
    quarantinedSummary?: boolean;
  }[];
  unrepairable: SqliteProblemShape[];
}

/**
 * Maintenance of a SQLite store (`module` is `@tidemark/sqlite`): the package's database check
 * finds damage inside the database, reading finds interrupted turns; repair by rows when the
 * package offers it.
 */
export function sqliteMaintenance(
  module: Record<string, unknown>,
  file: string,
  store: SessionStore,
  boundaryTypes: readonly string[] | undefined,
): Maintenance {
  const verifySqlite = module.verifySqliteStore;
  const maintenance: Maintenance = {
    verify: async (id) => [
      ...(typeof verifySqlite === 'function' ? await verifySqliteWith(verifySqlite, file, id) : []),
      ...(await verifyByReading(store, id)),
    ],
  };
  const repairSqlite = module.repairSqliteStore;
  if (typeof repairSqlite === 'function') {
    maintenance.repair = (id, request) =>
      repairSqliteSession(repairSqlite, store, file, id, request, boundaryTypes);
  }
  return maintenance;
}

async function verifySqliteWith(fn: unknown, file: string, id?: string): Promise<VerifyFinding[]> {
  const report = (await (
    fn as (file: string) => Promise<{ problems: SqliteProblemShape[] }> | { problems: SqliteProblemShape[] }
  )(file)) as { problems: SqliteProblemShape[] };
  return report.problems
    .filter((p) => id === undefined || p.sessionId === undefined || p.sessionId === id)
    .map((p) => ({
      kind: 'corrupt' as const,
      message: `${p.kind}: ${p.message}`,
      ...(p.sessionId !== undefined && { sessionId: p.sessionId }),
      location: p.location,
    }));
}

/**
 * `tidemark repair` on a SQLite store: with `--drop-corrupt`, the backend's row-level repair of this
 * one session (events from the first damaged one on go to the quarantine table); then a load with
 * the requested tail policy, which moves an interrupted tail aside with `--cut-tail`. Page-level
 * damage is not repaired by rows: that is CORRUPT, naming what to do instead.
 */
async function repairSqliteSession(
  repairSqlite: unknown,
  store: SessionStore,
  file: string,
  id: string,
  request: RepairRequest,
  boundaryTypes: readonly string[] | undefined,
): Promise<RepairOutcome> {
  const outcome: RepairOutcome = { quarantined: [], eventCount: 0 };
  if (request.dropCorrupt) {
    const report = await (
      repairSqlite as (
        file: string,
        options: { sessions: string[]; boundaryTypes?: readonly string[] },
      ) => Promise<SqliteRepairShape>
    )(file, { sessions: [id], ...(boundaryTypes !== undefined && { boundaryTypes }) });
    const pageDamage = report.unrepairable[0];
    if (pageDamage !== undefined) {
      throw new TidemarkError(
        'CORRUPT',
        `${file}: ${pageDamage.message}; a row-level repair cannot fix damaged pages: restore a backup, or salvage with sqlite3 .recover and import`,
        { ...(pageDamage.location !== undefined && { location: pageDamage.location }) },
      );
    }
    const done = report.repaired.find((r) => r.sessionId === id);
    if (done !== undefined && done.quarantinedEvents > 0) outcome.corruptEvents = done.quarantinedEvents;
    if (done?.quarantinedSummary === true) outcome.summarySetAside = true;
    if (outcome.corruptEvents !== undefined || outcome.summarySetAside === true)
      outcome.quarantined.push(`sqlite:${file}#quarantine/session_id=${id}`);
  }
  const loaded = await store.load(id, { tail: request.tail });
  outcome.eventCount = loaded.events.length;
  const cut = loaded.recovered?.cutEvents;
  if (cut !== undefined) outcome.cutEvents = cut;
  const at = loaded.recovered?.quarantinedAt;
  if (at !== undefined && !outcome.quarantined.includes(at)) outcome.quarantined.push(at);
  return outcome;
}
