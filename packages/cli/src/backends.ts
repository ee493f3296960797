// Opening a store from its address. The backend packages are loaded lazily with a computed
// specifier, so that the CLI builds and runs when one of them is missing or not yet built: that
// address then fails with UNAVAILABLE instead of the whole CLI failing to start.
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import {
  boundaryPredicate,
  commitStateOf,
  isENOENT,
  type SessionEvent,
  type SessionStore,
  type StoreOptions,
  TidemarkError,
  toIoError,
} from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import type { StoreAddress } from './address.js';
import { CliError } from './exit-codes.js';

/** One finding of `verify`. */
export interface VerifyFinding {
  /**
   * `torn`, `corrupt`, `problem` and `missing` (audited but missing) mean damage; `interrupted`
   * is a turn a crash cut short.
   */
  kind: 'torn' | 'corrupt' | 'interrupted' | 'problem' | 'unsupported-format' | 'missing';
  sessionId?: string;
  message: string;
  /** File and byte offset, or table and row, of the finding. */
  location?: { file?: string; offset?: number; table?: string; row?: string; seq?: number };
}

/** A store opened by the CLI, with what it knows about checking it read-only. */
export interface Backend {
  address: StoreAddress;
  store: SessionStore;
  /**
   * Backend-specific read-only check of one session or all (undefined when the backend offers
   * none; the CLI then falls back to a read-based check).
   */
  verify?: (id?: string) => Promise<VerifyFinding[]>;
  /** Backend-specific explicit repair (undefined: the CLI repairs through `load`). */
  repair?: (id: string, options: RepairRequest) => Promise<RepairOutcome>;
}

/** What `tidemark repair` asks for. */
export interface RepairRequest {
  /** Also quarantine the interrupted tail. */
  tail: 'keep' | 'cut';
  /** Also quarantine a corrupt log's damaged end (backends that support it). */
  dropCorrupt: boolean;
}

/** What a repair did. */
export interface RepairOutcome {
  tornBytes?: number;
  cutEvents?: number;
  corruptBytes?: number;
  /** Events taken out from the first damaged one on (backends that repair by rows). */
  corruptEvents?: number;
  /** Unreadable summary fields (tags, attrs) were set aside (backends that repair by rows). */
  summarySetAside?: boolean;
  /** Where removed data was kept. */
  quarantined: string[];
  /** Events in the log afterwards. */
  eventCount: number;
}

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

/** Ids of every session `list` knows, including the ones it could only report as problems. */
async function allIds(store: SessionStore): Promise<{ ids: string[]; findings: VerifyFinding[] }> {
  const ids: string[] = [];
  const findings: VerifyFinding[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list({ limit: 1000, ...(cursor !== undefined && { cursor }) });
    ids.push(...page.sessions.map((s) => s.id));
    for (const problem of page.problems) {
      ids.push(problem.id);
    }
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return { ids: [...new Set(ids)].sort(), findings };
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

async function importOptional(specifier: string, address: string): Promise<Record<string, unknown>> {
  try {
    return (await import(specifier)) as Record<string, unknown>;
  } catch (error) {
    const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new CliError(
      'UNAVAILABLE',
      `backend for ${address} is not available in this installation (${specifier}: ${detail})`,
    );
  }
}

function factory<T>(
  module: Record<string, unknown>,
  name: string,
  address: string,
): (options: T) => Promise<SessionStore> {
  const fn = module[name];
  if (typeof fn !== 'function')
    throw new CliError('UNAVAILABLE', `backend for ${address} is not available: ${name} is missing`);
  return fn as (options: T) => Promise<SessionStore>;
}

/** Opens the store at `address`. */
export async function openBackend(address: StoreAddress, options: StoreOptions = {}): Promise<Backend> {
  switch (address.kind) {
    case 'memory':
      return { address, store: await openMemoryStore(options) };
    case 'jsonl': {
      const module = await importOptional('@tidemark/jsonl', address.text);
      const open = factory<{ root: string } & StoreOptions>(module, 'openJsonlStore', address.text);
      const store = (await open({ root: address.dir, ...options })) as JsonlStoreShape;
      const backend: Backend = { address, store };
      const { verify, repair } = store;
      if (typeof verify === 'function') {
        // The backend's own read-only check: torn tails and corruption with byte offsets.
        backend.verify = async (id) => {
          const { ids, findings } = id === undefined ? await allIds(store) : { ids: [id], findings: [] };
          for (const each of ids) {
            try {
              findings.push(...findingsOfJsonlReport(await verify.call(store, each)));
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
        };
      } else {
        backend.verify = (id) => verifyJsonl(module, address.dir, store, id);
      }
      if (typeof repair === 'function') {
        backend.repair = async (id, request) => {
          const done = await repair.call(store, id, { tail: request.tail, dropCorrupt: request.dropCorrupt });
          const outcome: RepairOutcome = { quarantined: done.quarantined, eventCount: done.eventCount };
          if (done.tornBytes !== undefined) outcome.tornBytes = done.tornBytes;
          if (done.cutEvents !== undefined) outcome.cutEvents = done.cutEvents;
          if (done.corruptBytes !== undefined) outcome.corruptBytes = done.corruptBytes;
          return outcome;
        };
      }
      return backend;
    }
    case 'sqlite': {
      const module = await importOptional('@tidemark/sqlite', address.text);
      const open = factory<{ path: string } & StoreOptions>(module, 'openSqliteStore', address.text);
      const store = await open({ path: address.file, ...options });
      const verifySqlite = module.verifySqliteStore;
      const backend: Backend = { address, store };
      // The backend's check finds damage inside the database; reading finds interrupted turns.
      backend.verify = async (id) => [
        ...(typeof verifySqlite === 'function' ? await verifySqliteWith(verifySqlite, address.file, id) : []),
        ...(await verifyByReading(store, id)),
      ];
      const repairSqlite = module.repairSqliteStore;
      if (typeof repairSqlite === 'function') {
        backend.repair = (id, request) =>
          repairSqliteSession(repairSqlite, store, address.file, id, request, options.boundaryTypes);
      }
      return backend;
    }
    case 'postgres':
      throw new CliError(
        'UNAVAILABLE',
        `backend for ${address.text} is not available in this installation (@tidemark/postgres is not shipped yet)`,
      );
  }
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

interface SqliteProblemShape {
  kind: string;
  message: string;
  sessionId?: string;
  location: VerifyFinding['location'];
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

interface ScanShape {
  torn?: { offset: number; length: number; reason: string };
  problem?: { kind: string; offset: number; seq?: number; message: string };
  batches: { events: SessionEvent[] }[];
}

/**
 * Read-only check of JSONL logs with the backend's own scanner (`scanLog`): torn tails,
 * corruption with byte offsets, interrupted turns. Never writes, so it reports a torn tail that a
 * `load` would repair. Falls back to the read-based check when the scanner is not exported.
 */
async function verifyJsonl(
  module: Record<string, unknown>,
  root: string,
  store: SessionStore,
  id?: string,
): Promise<VerifyFinding[]> {
  const scanLog = module.scanLog;
  if (typeof scanLog !== 'function') return verifyByReading(store, id);
  const isBoundary = boundaryPredicate();
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
      const file = join(dir, name);
      let bytes: Uint8Array;
      try {
        bytes = await fsp.readFile(file);
      } catch (error) {
        findings.push({
          kind: 'problem',
          sessionId,
          message: toIoError(error, `reading ${file}`).message,
          location: { file },
        });
        continue;
      }
      const scan = (scanLog as (bytes: Uint8Array) => ScanShape)(bytes);
      if (scan.problem !== undefined) {
        findings.push({
          kind: scan.problem.kind === 'unsupported-format' ? 'unsupported-format' : 'corrupt',
          sessionId,
          message: scan.problem.message,
          location: {
            file,
            offset: scan.problem.offset,
            ...(scan.problem.seq !== undefined && { seq: scan.problem.seq }),
          },
        });
        continue;
      }
      if (scan.torn !== undefined) {
        findings.push({
          kind: 'torn',
          sessionId,
          message: `torn tail of ${scan.torn.length} byte(s) (${scan.torn.reason}); the next load quarantines it`,
          location: { file, offset: scan.torn.offset },
        });
      }
      const events = scan.batches.flatMap((b) => b.events);
      const state = commitStateOf(events, isBoundary);
      if (state.interrupted) {
        findings.push({
          kind: 'interrupted',
          sessionId,
          message: `interrupted turn: ${events.length - 1 - state.committedSeq} event(s) after the last boundary (seq ${state.committedSeq})`,
          location: { file, seq: state.committedSeq + 1 },
        });
      }
    }
  }
  if (id !== undefined && seen === 0) return verifyByReading(store, id);
  return findings;
}

/**
 * The portable check: streams every event through `read` (which writes nothing), checking that
 * seqs are contiguous from 0 and that the summary's count matches; reports read errors with their
 * location and interrupted turns.
 */
export async function verifyByReading(store: SessionStore, id?: string): Promise<VerifyFinding[]> {
  const findings: VerifyFinding[] = [];
  const isBoundary = boundaryPredicate();
  const targets: { id: string; eventCount?: number }[] = [];
  if (id !== undefined) targets.push({ id });
  else {
    let cursor: string | undefined;
    do {
      const page = await store.list({ limit: 1000, ...(cursor !== undefined && { cursor }) });
      targets.push(...page.sessions.map((s) => ({ id: s.id, eventCount: s.eventCount })));
      for (const problem of page.problems) {
        findings.push({
          kind: problem.error.code === 'CORRUPT' ? 'corrupt' : 'problem',
          sessionId: problem.id,
          message: `${problem.error.code}: ${problem.error.message}`,
          ...(problem.error.location !== undefined && { location: problem.error.location }),
        });
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }
  for (const target of targets) {
    const seqTypes: Pick<SessionEvent, 'seq' | 'type'>[] = [];
    try {
      for await (const event of store.read(target.id)) {
        if (event.seq !== seqTypes.length) {
          findings.push({
            kind: 'corrupt',
            sessionId: target.id,
            message: `seq gap: expected ${seqTypes.length}, found ${event.seq}`,
            location: { seq: seqTypes.length },
          });
          break;
        }
        seqTypes.push({ seq: event.seq, type: event.type });
      }
    } catch (error) {
      const typed = toIoError(error, `reading ${target.id}`, target.id);
      if (typed.code === 'NOT_FOUND' && id !== undefined) throw typed;
      findings.push({
        kind:
          typed.code === 'CORRUPT'
            ? 'corrupt'
            : typed.code === 'UNSUPPORTED_FORMAT'
              ? 'unsupported-format'
              : 'problem',
        sessionId: target.id,
        message: `${typed.code}: ${typed.message}`,
        ...(typed.location !== undefined && { location: typed.location }),
      });
      continue;
    }
    if (target.eventCount !== undefined && target.eventCount !== seqTypes.length) {
      findings.push({
        kind: 'problem',
        sessionId: target.id,
        message: `summary says ${target.eventCount} events, the log holds ${seqTypes.length}`,
      });
    }
    const state = commitStateOf(seqTypes, isBoundary);
    if (state.interrupted) {
      findings.push({
        kind: 'interrupted',
        sessionId: target.id,
        message: `interrupted turn: ${seqTypes.length - 1 - state.committedSeq} event(s) after the last boundary (seq ${state.committedSeq})`,
        location: { seq: state.committedSeq + 1 },
      });
    }
  }
  return findings;
}
