// The JSONL store: the operations of SPEC §4 as sequences of I/O steps. Formats, scanning and
// summary rules live in format.ts, scan.ts and summary.ts; this file only orders reads, writes,
// syncs and locks, and decides what a fault means.
import { dirname } from 'node:path';
import {
  advanceCommitState,
  applyPatch,
  assertSameEvents,
  assertValidId,
  type BoundaryPredicate,
  boundaryPredicate,
  type CommitState,
  type CreateInit,
  commitStateOf,
  compareForList,
  DEFAULT_MAX_EVENT_BYTES,
  type DeleteOptions,
  type Durability,
  deleteConflict,
  emptySummary,
  encodeCursor,
  errnoOf,
  errors,
  type FileHandlePort,
  type FileSystem,
  generateId,
  isAfterCursor,
  isTidemarkError,
  isValidId,
  type ListProblem,
  type ListQuery,
  type LoadedSession,
  type LoadOptions,
  loadedSession,
  nextUpdatedAt,
  nodeFileSystem,
  nowIso,
  type PreparedEvent,
  planAppend,
  prepareBatch,
  type ReadRange,
  type RecoveryReport,
  type SessionEvent,
  type SessionMeta,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type StoreOptions,
  type SummaryPatch,
  type TidemarkError,
  toIoError,
  validateCreate,
  validateDeleteOptions,
  validateListQuery,
  validateLoadOptions,
  validatePatch,
  validateRange,
} from '@tidemark/core';
import { io, ioOrAbsent, problemError, quietly } from './errors.js';
import { decodeHeaderLine, encodeBatch, encodeHeader, FORMAT_VERSION, type LogHeader } from './format.js';
import {
  bucketOf,
  defaultRoot,
  idOfLogName,
  isBucketName,
  type SessionPaths,
  sessionPaths,
} from './layout.js';
import { acquireLock, type HeldLock, type LockHolder } from './lock.js';
import { MarkKeeper, markMatches, type StreamMark } from './mark.js';
import { ensureDir, publishFile, quarantineRange, scanHandle, writeAll } from './recovery.js';
import { LogScanner, type ScanBatch, type ScanEnd, settleTear } from './scan.js';
import {
  decodeSidecar,
  SIDECAR_REFRESH_BYTES,
  type Sidecar,
  SummaryFolder,
  writeSidecar,
} from './summary.js';
import type { VerifyReport } from './verify.js';

/** Options of {@link openJsonlStore}. */
export interface JsonlStoreOptions extends StoreOptions {
  /** Store root. Default `$TIDEMARK_HOME/sessions`, else `~/.tidemark/sessions`. */
  root?: string;
  /** File system port; default the real one. The fault harness passes a wrapped one. */
  fs?: FileSystem;
  /**
   * `file` (default): a writer holds `<id>.lock`, so another process or store instance appending
   * to the same session gets CONFLICT. `none`: no lock files, for a store that is certain to be
   * the only writer (no cross-process protection).
   */
  lock?: 'file' | 'none';
  /** Writers (open descriptors and locks) kept open at once; the least recently used idle one is closed beyond this. Default 64. */
  maxOpenWriters?: number;
}

/** What {@link JsonlStore.repair} may remove. */
export interface RepairOptions {
  /** `cut` also moves the interrupted tail to quarantine. Default `keep`. */
  tail?: 'keep' | 'cut';
  /**
   * Also repair a CORRUPT log: everything from the first damaged byte on (including later valid
   * events, which can no longer be trusted to be contiguous) goes to quarantine. Default false.
   */
  dropCorrupt?: boolean;
}

/** The outcome of {@link JsonlStore.repair}. */
export interface RepairReport extends RecoveryReport {
  /** Bytes taken out of a corrupt log (with `dropCorrupt`). */
  corruptBytes?: number;
  /** Every quarantine file written by this repair. */
  quarantined: string[];
  /** Events in the log after the repair. */
  eventCount: number;
}

/** A session this instance writes: its open log, its lock and what it knows of the log. */
interface Writer {
  id: string;
  paths: SessionPaths;
  handle: FileHandlePort | undefined;
  lock: HeldLock | undefined;
  /** Length of the log: everything before it is committed. */
  size: number;
  nextSeq: number;
  /** `at` of the last batch (or `updatedAt` of the last update) in ms: appends record a later time. */
  lastAtMs: number;
  /** `logSize` of the sidecar on disk, -1 when unknown. */
  sidecarSize: number;
  /** Relaxed durability: batches written since the last fdatasync. */
  unsynced: boolean;
  /** What opening this writer repaired, until a load reports it. */
  repaired: RecoveryReport | undefined;
}

/** A full read of a log. */
interface WholeLog {
  header: LogHeader | undefined;
  batches: ScanBatch[];
  end: ScanEnd;
  summary: SessionSummary | undefined;
}

interface Pending {
  meta: Omit<SessionMeta, 'formatVersion'>;
  patch: SummaryPatch;
}

const LIST_PARALLELISM = 16;

/** Re-reads of an anomaly at one place in read(), before it is taken as the log's (see readEvents). */
const MAX_REREADS = 3;

/** Bytes read to find a log's header line without scanning the log (headers are small). */
const HEADER_PROBE_BYTES = 64 * 1024;

/**
 * The crash-safe JSONL backend. Use {@link openJsonlStore}; the class is exported for the
 * `repair` method the CLI needs.
 */
export class JsonlStore implements SessionStore {
  /** The store root. */
  readonly root: string;
  private readonly fs: FileSystem;
  private readonly durability: Durability;
  /**
   * Flags of the kept-open log descriptors: strict durability opens them O_DSYNC (`'r+dsync'`), so
   * that one write per batch is durable when it returns, with no separate fdatasync.
   */
  private readonly logFlags: 'r+' | 'r+dsync';
  private readonly isBoundary: BoundaryPredicate;
  private readonly limits: { maxEventBytes?: number; maxDepth?: number };
  private readonly locking: boolean;
  private readonly maxOpenWriters: number;
  private readonly pending = new Map<string, Pending>();
  private readonly writers = new Map<string, Writer>();
  /**
   * Descriptors of `read()` iterators under way. A caller may stop iterating without `break`
   * (so the generator's `finally` never runs); `close()` closes what they still hold.
   */
  private readonly readers = new Set<FileHandlePort>();
  private readonly buckets = new Map<string, string>();
  private readonly queues = new Map<string, { tail: Promise<void>; depth: number }>();
  /** Writers being retired outside their session's queue (LRU eviction): a new writer waits for them. */
  private readonly retiring = new Map<string, Promise<void>>();
  private closed = false;
  /** Whether this instance synced the parent of a root it found existing (see `ensureRoot`). */
  private rootEntrySynced = false;

  constructor(options: JsonlStoreOptions = {}) {
    this.root = options.root ?? defaultRoot();
    this.fs = options.fs ?? nodeFileSystem;
    this.durability = options.durability ?? 'strict';
    if (this.durability !== 'strict' && this.durability !== 'relaxed') {
      throw errors.invalid(`durability must be 'strict' or 'relaxed'`);
    }
    this.logFlags = this.durability === 'strict' ? 'r+dsync' : 'r+';
    this.isBoundary = boundaryPredicate(options.boundaryTypes);
    this.limits = {};
    if (options.maxEventBytes !== undefined) {
      // The log's reader accepts lines of one largest event plus framing; a store that accepted
      // larger events would acknowledge lines that it (and every other reader) then calls corrupt.
      if (
        !Number.isSafeInteger(options.maxEventBytes) ||
        options.maxEventBytes < 1 ||
        options.maxEventBytes > DEFAULT_MAX_EVENT_BYTES
      ) {
        throw errors.invalid(
          `maxEventBytes must be an integer from 1 to ${DEFAULT_MAX_EVENT_BYTES} (the longest event a JSONL log holds), got ${String(options.maxEventBytes)}`,
        );
      }
      this.limits.maxEventBytes = options.maxEventBytes;
    }
    if (options.maxDepth !== undefined) this.limits.maxDepth = options.maxDepth;
    this.locking = (options.lock ?? 'file') === 'file';
    this.maxOpenWriters = Math.max(1, options.maxOpenWriters ?? 64);
  }

  // ---------------------------------------------------------------- operations

  async create(init?: CreateInit): Promise<SessionMeta> {
    this.assertOpen();
    const { meta, patch } = validateCreate(init, generateId);
    return this.exclusive(meta.id, async () => {
      this.assertOpen();
      if (this.pending.has(meta.id) || (await this.locate(meta.id)) !== undefined)
        throw errors.alreadyExists(meta.id);
      this.pending.set(meta.id, { meta, patch });
      return { ...structuredClone(meta), formatVersion: FORMAT_VERSION };
    });
  }

  async append(id: string, events: readonly SessionEvent[]): Promise<{ nextSeq: number }> {
    this.assertOpen();
    assertValidId(id);
    const batch = prepareBatch(events, this.limits, id);
    return this.exclusive(id, async () => {
      this.assertOpen();
      const writer = await this.ensureWriter(id);
      if (writer === undefined) {
        const pending = this.pending.get(id);
        if (pending === undefined) throw errors.notFound(id);
        return this.publishFirst(id, pending, batch);
      }
      const result = await this.appendTo(writer, batch);
      // A session materialized by another instance makes this instance's reservation moot once an
      // append of ours lands there. A refused one (CONFLICT, I/O) keeps it, as the memory model does:
      // if the other instance deletes the session, this instance's first batch still creates it.
      this.pending.delete(id);
      return result;
    });
  }

  async load(id: string, options?: LoadOptions): Promise<LoadedSession> {
    this.assertOpen();
    assertValidId(id);
    const tail = validateLoadOptions(options);
    return this.exclusive(id, async () => {
      this.assertOpen();
      const paths = await this.locate(id);
      if (paths === undefined) throw errors.notFound(id);
      let log = await this.readWhole(paths, id);
      let recovered: RecoveryReport | undefined;
      const interrupted = () => commitStateOf(flatten(log.batches), this.isBoundary).interrupted;
      const wantsCut = tail === 'cut' && log.end.problem === undefined && interrupted();
      if (log.end.problem === undefined && (log.end.torn !== undefined || wantsCut)) {
        const writer = await this.writerForRepair(id, log.end.torn !== undefined, wantsCut);
        if (writer !== undefined) {
          recovered = writer.repaired;
          writer.repaired = undefined;
          if (wantsCut) {
            const cut = await this.cutTail(writer);
            if (cut !== undefined) recovered = { ...recovered, ...cut };
          }
          log = await this.readWhole(writer.paths, id);
        }
      }
      if (log.end.problem !== undefined) throw problemError(log.end.problem, paths.log, id);
      const header = log.header!;
      if (header.meta.id !== id) throw foreignLog(paths.log, id, header.meta.id);
      const events = flatten(log.batches);
      const state = commitStateOf(events, this.isBoundary);
      const summary = { ...log.summary!, eventCount: events.length, ...state };
      return loadedSession(header.meta, summary, events, state, recovered);
    });
  }

  read(id: string, range?: ReadRange): AsyncIterable<SessionEvent> {
    const self = this;
    return {
      async *[Symbol.asyncIterator]() {
        self.assertOpen();
        assertValidId(id);
        const { fromSeq, toSeq } = validateRange(range);
        yield* self.readEvents(id, fromSeq, toSeq);
      },
    };
  }

  async list(query?: ListQuery): Promise<SessionPage> {
    this.assertOpen();
    const q = validateListQuery(query);
    const buckets =
      q.cwd !== undefined
        ? [bucketOf(q.cwd)]
        : (
            (await ioOrAbsent(`reading ${this.root}`, undefined, () => this.fs.readdir(this.root))) ?? []
          ).filter(isBucketName);
    const found: { id: string; paths: SessionPaths }[] = [];
    for (const bucket of buckets.sort()) {
      const dir = sessionPaths(this.root, bucket, 'x').dir;
      const names = await ioOrAbsent(`reading ${dir}`, undefined, () => this.fs.readdir(dir));
      for (const name of names ?? []) {
        const id = idOfLogName(name);
        if (id !== undefined && isValidId(id)) found.push({ id, paths: sessionPaths(this.root, bucket, id) });
      }
    }
    const summaries: SessionSummary[] = [];
    const problems: ListProblem[] = [];
    await forEachLimited(found, LIST_PARALLELISM, async ({ id, paths }) => {
      try {
        const summary = await this.listedSummary(paths, id);
        if (summary !== undefined) summaries.push(summary);
      } catch (error) {
        problems.push({ id, error: toIoError(error, `summarizing ${id}`, id) });
      }
    });
    this.assertOpen();
    const all = summaries
      .filter((s) => q.cwd === undefined || s.cwd === q.cwd)
      .filter((s) => q.cursor === undefined || isAfterCursor(s, q.cursor))
      .sort(compareForList);
    const sessions = all.slice(0, q.limit);
    const page: SessionPage = { sessions, problems: problems.sort((a, b) => (a.id < b.id ? -1 : 1)) };
    if (all.length > q.limit) page.nextCursor = encodeCursor(sessions[sessions.length - 1]!);
    return page;
  }

  async has(id: string): Promise<boolean> {
    this.assertOpen();
    assertValidId(id);
    return (await this.locate(id)) !== undefined;
  }

  async update(id: string, patch: SummaryPatch): Promise<SessionSummary> {
    this.assertOpen();
    assertValidId(id);
    const valid = validatePatch(patch);
    return this.exclusive(id, async () => {
      this.assertOpen();
      const writer = await this.ensureWriter(id);
      if (writer === undefined) {
        const pending = this.pending.get(id);
        if (pending === undefined) throw errors.notFound(id);
        const merged = { ...pending.patch, ...valid };
        const summary = applyPatch(emptySummary(pending.meta), merged, pending.meta.createdAt);
        pending.patch = merged;
        return summary;
      }
      // A sidecar only ever counts durable bytes (a tear inside them is then damage, not an
      // unfinished write: see settleTear), so relaxed appends not yet synced are synced first.
      if (writer.unsynced && writer.handle !== undefined) {
        const handle = writer.handle;
        try {
          await handle.datasync();
        } catch (error) {
          // Never retried on this descriptor (retire would sync again): the next use reopens and
          // rescans the log.
          writer.unsynced = false;
          await quietly(() => this.retireWriter(id, false));
          throw toIoError(error, `syncing ${writer.paths.log}`, id);
        }
        writer.unsynced = false;
      }
      const previous = await this.readSidecar(writer.paths, id);
      const current = await this.currentSummary(writer.paths, id, writer.size);
      const next = applyPatch(current, valid, nextUpdatedAt(current.updatedAt));
      await writeSidecar(
        this.fs,
        writer.paths.dir,
        writer.paths.summary,
        { logSize: writer.size, summary: next },
        {
          syncDir: false,
          sessionId: id,
        },
      );
      try {
        await io(`syncing ${writer.paths.dir}`, id, () => this.fs.syncDir(writer.paths.dir));
      } catch (error) {
        // The new sidecar is visible but not durable: put the previous one back, so that a failed
        // update changes nothing a reader can see.
        await quietly(() =>
          previous === undefined
            ? this.fs.unlink(writer.paths.summary)
            : writeSidecar(this.fs, writer.paths.dir, writer.paths.summary, previous, {
                syncDir: false,
                sessionId: id,
              }),
        );
        throw error;
      }
      writer.sidecarSize = writer.size;
      writer.lastAtMs = Math.max(writer.lastAtMs, Date.parse(next.updatedAt));
      return structuredClone(next);
    });
  }

  async delete(id: string, options?: DeleteOptions): Promise<void> {
    this.assertOpen();
    assertValidId(id);
    const ifUpdatedAt = validateDeleteOptions(options);
    return this.exclusive(id, async () => {
      this.assertOpen();
      const paths = await this.locate(id);
      if (paths === undefined) {
        if (this.pending.delete(id)) return;
        throw errors.notFound(id);
      }
      await quietly(() => this.retireWriter(id, false));
      await this.assertRealBucket(paths, id);
      const lock = await this.lockSession(paths, id);
      try {
        if (ifUpdatedAt !== undefined) {
          // Under the session lock: no writer in any process can append or update until we are done.
          const current = await this.currentSummary(paths, id);
          if (current.updatedAt !== ifUpdatedAt) throw deleteConflict(id, ifUpdatedAt, current.updatedAt);
        }
        // The log goes first: from then on the session is absent; a sidecar without a log is ignored.
        const removed = await ioOrAbsent(`removing ${paths.log}`, id, () =>
          this.fs.unlink(paths.log).then(() => true),
        );
        // This instance's reservation ends with a delete that removed the session, or that found
        // only the reservation (the log vanished meanwhile); a refused delete (CONFLICT, IO) keeps
        // it, as the memory model and sqlite do.
        if (removed === undefined) {
          if (this.pending.delete(id)) return;
          throw errors.notFound(id);
        }
        this.pending.delete(id);
        // The log's removal is made durable before the summary's: a power cut may otherwise keep
        // the second unlink and drop the first, and the session would come back without its
        // summary (title, tags and attrs live only there), i.e. half-deleted.
        await io(`syncing ${paths.dir}`, id, () => this.fs.syncDir(paths.dir));
        await ioOrAbsent(`removing ${paths.summary}`, id, () => this.fs.unlink(paths.summary));
        await io(`syncing ${paths.dir}`, id, () => this.fs.syncDir(paths.dir));
      } finally {
        this.buckets.delete(id);
        if (lock !== undefined) await quietly(() => lock.release());
      }
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Operations already under way may still open a writer (a first append takes a lock and keeps
    // a descriptor): let them finish first, so that close releases what they leave.
    for (let queues = [...this.queues.values()]; queues.length > 0; queues = [...this.queues.values()]) {
      await Promise.all(queues.map((queue) => queue.tail));
    }
    let failure: unknown;
    for (const id of [...this.writers.keys()]) {
      try {
        await this.exclusive(id, () => this.retireWriter(id, true));
      } catch (error) {
        failure ??= error;
      }
    }
    for (const handle of this.readers) await quietly(() => handle.close());
    this.readers.clear();
    this.pending.clear();
    if (failure !== undefined) throw toIoError(failure, 'closing the store');
  }

  /**
   * Explicit repair (for `tidemark repair`): sets torn bytes aside, with `tail: 'cut'` the
   * interrupted tail, and with `dropCorrupt` everything from the first damaged byte of a corrupt
   * log. Every removed byte goes to `<root>/.quarantine/` first.
   */
  async repair(id: string, options: RepairOptions = {}): Promise<RepairReport> {
    this.assertOpen();
    assertValidId(id);
    return this.exclusive(id, async () => {
      this.assertOpen();
      const quarantined: string[] = [];
      const report: RepairReport = { quarantined, eventCount: 0 };
      const paths = await this.locate(id);
      if (paths === undefined) throw errors.notFound(id);
      if (options.dropCorrupt === true) {
        const dropped = await this.dropCorrupt(id, paths);
        if (dropped !== undefined) {
          report.corruptBytes = dropped.bytes;
          quarantined.push(dropped.path);
        }
      }
      const writer = await this.ensureWriter(id);
      if (writer === undefined) throw errors.notFound(id);
      if (writer.repaired !== undefined) {
        Object.assign(report, writer.repaired);
        if (writer.repaired.quarantinedAt !== undefined) quarantined.push(writer.repaired.quarantinedAt);
        writer.repaired = undefined;
      }
      if (options.tail === 'cut') {
        const cut = await this.cutTail(writer);
        if (cut !== undefined) {
          report.cutEvents = cut.cutEvents;
          report.quarantinedAt = cut.quarantinedAt;
          quarantined.push(cut.quarantinedAt);
        }
      }
      report.eventCount = writer.nextSeq;
      return report;
    });
  }

  /** Checks a log without changing anything (see `verifySession`). Bounded memory. */
  async verify(id: string): Promise<VerifyReport> {
    this.assertOpen();
    assertValidId(id);
    const paths = await this.locate(id);
    if (paths === undefined) throw errors.notFound(id);
    const handle = await ioOrAbsent(`opening ${paths.log}`, id, () => this.fs.open(paths.log, 'r'));
    if (handle === undefined) throw errors.notFound(id);
    try {
      let state: CommitState = { committedSeq: -1, interrupted: false };
      const scanned = await scanHandle(handle, `reading ${paths.log}`, id, {
        onBatch: (batch) => {
          state = advanceCommitState(state, batch.events, this.isBoundary);
          return true;
        },
      });
      const end = await this.settledAgainstSidecar(scanned, paths, id);
      const report: VerifyReport = {
        id,
        path: paths.log,
        status: 'ok',
        eventCount: end.eventCount,
        committedSeq: state.committedSeq,
        interrupted: state.interrupted,
        bytes: end.totalBytes,
      };
      if (end.problem === undefined && end.header !== undefined && end.header.meta.id !== id) {
        report.problem = {
          kind: 'corrupt',
          offset: 0,
          message: `the log holds the header of session ${end.header.meta.id}`,
        };
        report.status = 'corrupt';
      } else if (end.problem !== undefined) {
        report.problem = end.problem;
        report.status = end.problem.kind;
      } else if (end.torn !== undefined) {
        report.torn = end.torn;
        report.status = 'torn';
      } else if (state.interrupted) {
        report.status = 'interrupted';
      }
      return report;
    } finally {
      await quietly(() => handle.close());
    }
  }

  // ---------------------------------------------------------------- writing

  /** First batch: header and events published together as a new file (temp, fsync, link, dir fsync). */
  private async publishFirst(
    id: string,
    pending: Pending,
    batch: PreparedEvent[],
  ): Promise<{ nextSeq: number }> {
    planAppend(id, 0, batch);
    const paths = sessionPaths(this.root, bucketOf(pending.meta.cwd), id);
    await this.ensureRoot(id);
    await ensureDir(this.fs, paths.dir, this.root, id);
    await this.assertRealBucket(paths, id);
    const lock = await this.lockSession(paths, id);
    try {
      // Under the id's lock, which every writer of this id takes whatever its cwd: another writer
      // may have published the id in another bucket first. Then it is that session, as when the
      // link below finds our own bucket taken, and as the reference model has it: the batch goes
      // through its seq rules (CONFLICT, or an idempotent retry).
      const elsewhere = await this.logInBuckets(id, new Set([paths.bucket]));
      if (elsewhere !== undefined) {
        const writer = await this.openWriter(id, elsewhere, lock);
        if (writer === undefined) throw errors.notFound(id);
        return this.appendToReserved(writer, batch);
      }
      const last = batch[batch.length - 1]!.event.seq;
      // The time of this append, as the reference model has it: a given createdAt (an import keeps
      // the original's, which another machine's clock may have put in our future) is not a change.
      const at = nowIso();
      const headerText = encodeHeader(pending.meta, pending.patch);
      const bytes = Buffer.from(headerText + encodeBatch(batch, last, at), 'utf8');
      // No log here, and we hold the id's lock: a sidecar here is left from an earlier session of
      // this id (a delete whose unlink of it was lost in a crash), maybe with the same createdAt (a
      // restore or import keeps it). It must never describe the new log: remove it, durably, first.
      if ((await ioOrAbsent(`inspecting ${paths.log}`, id, () => this.fs.lstat(paths.log))) === undefined) {
        const removed = await ioOrAbsent(`removing ${paths.summary}`, id, () =>
          this.fs.unlink(paths.summary).then(() => true),
        );
        // Synced on its own: a crash may otherwise keep the new log's link and lose this unlink.
        if (removed) await io(`syncing ${paths.dir}`, id, () => this.fs.syncDir(paths.dir));
      }
      const published = await publishFile(
        this.fs,
        paths.dir,
        paths.log,
        (handle) => writeAll(handle, bytes, 0),
        'link',
        id,
      );
      if (!published) {
        // Another instance published this id first: append to its log like any other.
        const writer = await this.openWriter(id, paths, lock);
        if (writer === undefined) throw errors.notFound(id);
        return this.appendToReserved(writer, batch);
      }
      this.pending.delete(id);
      this.buckets.set(id, paths.bucket);
      const handle = await ioOrAbsent(`opening ${paths.log}`, id, () =>
        this.fs.open(paths.log, this.logFlags),
      ).catch(() => undefined);
      const writer: Writer = {
        id,
        paths,
        handle,
        lock,
        size: bytes.length,
        nextSeq: last + 1,
        lastAtMs: Date.parse(at),
        sidecarSize: -1,
        unsynced: false,
        repaired: undefined,
      };
      await this.register(writer);
      // The header holds what the sidecar would add, so the sidecar need not be durable here.
      const folder = new SummaryFolder(undefined, this.isBoundary);
      const headerBytes = Buffer.byteLength(headerText);
      folder.header(
        {
          version: FORMAT_VERSION,
          meta: { ...pending.meta, formatVersion: FORMAT_VERSION },
          init: pending.patch,
        },
        headerBytes,
      );
      folder.batch({ events: batch.map((p) => p.event), at, offset: headerBytes, endOffset: bytes.length });
      await quietly(async () => {
        await writeSidecar(
          this.fs,
          paths.dir,
          paths.summary,
          { logSize: writer.size, summary: folder.result()! },
          {
            syncDir: false,
            sessionId: id,
          },
        );
        writer.sidecarSize = writer.size;
      });
      return { nextSeq: writer.nextSeq };
    } catch (error) {
      if (lock !== undefined && !this.writers.has(id)) await quietly(() => lock.release());
      throw error;
    }
  }

  /**
   * {@link appendTo} for an id this instance reserved, on the log another instance published: the
   * reservation ends once the append succeeds there, and a refused one (CONFLICT, IO) keeps it, as
   * in `append` and the reference model.
   */
  private async appendToReserved(writer: Writer, batch: PreparedEvent[]): Promise<{ nextSeq: number }> {
    const result = await this.appendTo(writer, batch);
    this.pending.delete(writer.id);
    return result;
  }

  /**
   * Later batches: idempotent retry check, then one write. Strict: on the O_DSYNC descriptor, so
   * the write returns once the batch is durable. Relaxed: plus one fdatasync for a boundary batch.
   */
  private async appendTo(writer: Writer, batch: PreparedEvent[]): Promise<{ nextSeq: number }> {
    const id = writer.id;
    const plan = planAppend(id, writer.nextSeq, batch);
    if (plan.kind === 'compare') {
      const stored: SessionEvent[] = [];
      for await (const event of this.readEvents(id, plan.fromSeq, plan.toSeq)) stored.push(event);
      assertSameEvents(id, stored, batch);
      return { nextSeq: writer.nextSeq };
    }
    if (writer.handle === undefined) await this.reopenHandle(writer);
    const handle = writer.handle!;
    const last = batch[batch.length - 1]!.event.seq;
    // As core's nextUpdatedAt, on numbers: the clock, or 1 ms past the last change if it has not moved.
    const nowMs = Date.now();
    const atMs = nowMs > writer.lastAtMs ? nowMs : writer.lastAtMs + 1;
    const at = new Date(atMs).toISOString();
    const bytes = Buffer.from(encodeBatch(batch, last, at), 'utf8');
    const sync = this.durability === 'strict' || batch.some((item) => this.isBoundary(item.event));
    try {
      await writeAll(handle, bytes, writer.size);
      if (sync && this.logFlags !== 'r+dsync') await handle.datasync();
    } catch (error) {
      await this.rollback(writer);
      throw toIoError(error, `appending to ${writer.paths.log}`, id);
    }
    writer.size += bytes.length;
    writer.nextSeq = last + 1;
    writer.lastAtMs = atMs;
    writer.unsynced = !sync;
    if (sync && writer.size - writer.sidecarSize > SIDECAR_REFRESH_BYTES) {
      await quietly(() => this.refreshSidecar(writer));
    }
    return { nextSeq: writer.nextSeq };
  }

  /**
   * After a failed write or fsync (a failed write on the O_DSYNC descriptor is a failed fdatasync
   * too): never retry the sync on the same descriptor (the kernel may have dropped the dirty pages
   * and would report success). Close it, reopen, truncate back to the committed length, sync, and
   * check the length. If that fails too, drop the writer: the next use rescans the log and repairs
   * its tail.
   */
  private async rollback(writer: Writer): Promise<void> {
    const broken = writer.handle;
    writer.handle = undefined;
    if (broken !== undefined) await quietly(() => broken.close());
    try {
      await this.reopenHandle(writer);
    } catch {
      await quietly(() => this.retireWriter(writer.id, false));
    }
  }

  private async reopenHandle(writer: Writer): Promise<void> {
    const { log } = writer.paths;
    const handle = await io(`opening ${log}`, writer.id, () => this.fs.open(log, this.logFlags));
    try {
      const size = await io(`inspecting ${log}`, writer.id, () => handle.size());
      if (size < writer.size) {
        throw errors.corrupt(`session ${writer.id}: ${log} is shorter than its committed length`, {
          file: log,
          offset: size,
        });
      }
      if (size > writer.size) {
        await io(`truncating ${log}`, writer.id, () => handle.truncate(writer.size));
        await io(`syncing ${log}`, writer.id, () => handle.datasync());
        const after = await io(`inspecting ${log}`, writer.id, () => handle.size());
        if (after !== writer.size)
          throw toIoError(new Error(`truncate left ${after} bytes`), `truncating ${log}`, writer.id);
      }
    } catch (error) {
      await quietly(() => handle.close());
      throw error;
    }
    writer.handle = handle;
  }

  /** The writer of a session: this instance's, or a new one (lock, scan, torn-tail repair). */
  private async ensureWriter(id: string): Promise<Writer | undefined> {
    const existing = this.writers.get(id);
    if (existing !== undefined) {
      this.writers.delete(id);
      this.writers.set(id, existing); // most recently used last
      if (existing.handle === undefined) {
        try {
          await this.reopenHandle(existing);
        } catch (error) {
          await quietly(() => this.retireWriter(id, false));
          throw error;
        }
      }
      return existing;
    }
    await this.retiring.get(id)?.catch(() => undefined);
    const paths = await this.locate(id);
    if (paths === undefined) return undefined;
    await this.assertRealBucket(paths, id);
    const lock = await this.lockSession(paths, id);
    return this.openWriter(id, paths, lock);
  }

  /** Opens the log of a session whose lock is held, scans it, repairs a torn tail, registers the writer. */
  private async openWriter(
    id: string,
    paths: SessionPaths,
    lock: HeldLock | undefined,
  ): Promise<Writer | undefined> {
    const release = async () => {
      if (lock !== undefined) await quietly(() => lock.release());
    };
    let handle: FileHandlePort;
    try {
      const opened = await ioOrAbsent(`opening ${paths.log}`, id, () =>
        this.fs.open(paths.log, this.logFlags),
      );
      if (opened === undefined) {
        this.buckets.delete(id);
        await release();
        return undefined;
      }
      handle = opened;
    } catch (error) {
      await release();
      throw error;
    }
    try {
      const sidecar = await this.readSidecar(paths, id);
      let lastAt: string | undefined;
      const { header, end, folder } = await this.scanFolding(handle, paths, id, sidecar, (batch) => {
        lastAt = batch.at;
      });
      if (end.problem !== undefined) throw problemError(end.problem, paths.log, id);
      if (header !== undefined && header.meta.id !== id) throw foreignLog(paths.log, id, header.meta.id);
      let repaired: RecoveryReport | undefined;
      if (end.torn !== undefined) {
        // Set the torn bytes aside first, then cut them off: a new line never joins a torn one.
        const at = await quarantineRange(
          this.fs,
          this.root,
          id,
          'torn',
          handle,
          end.torn.offset,
          end.torn.length,
        );
        await io(`truncating ${paths.log}`, id, () => handle.truncate(end.committedBytes));
        await io(`syncing ${paths.log}`, id, () => handle.datasync());
        repaired = { tornBytes: end.torn.length, quarantinedAt: at };
      } else if ((this.committedSizeOf(sidecar, header) ?? -1) < end.committedBytes) {
        // Bytes no sidecar counted yet may be a relaxed writer's unsynced batches, left by a process
        // that died: make them durable before this writer's sidecar counts them (see settleTear).
        await io(`syncing ${paths.log}`, id, () => handle.datasync());
      }
      const summary = folder.result()!;
      const writer: Writer = {
        id,
        paths,
        handle,
        lock,
        size: end.committedBytes,
        nextSeq: end.nextSeq,
        lastAtMs: Math.max(Date.parse(summary.updatedAt), Date.parse(lastAt ?? summary.updatedAt)),
        sidecarSize: sidecar?.logSize ?? -1,
        unsynced: false,
        repaired,
      };
      if (!folder.isAnchored) {
        // Missing, foreign or describing a longer log (a repair shortened it): rewrite it before any
        // append can make a stale sidecar look current again.
        await writeSidecar(
          this.fs,
          paths.dir,
          paths.summary,
          { logSize: writer.size, summary },
          {
            syncDir: true,
            sessionId: id,
          },
        );
        writer.sidecarSize = writer.size;
      }
      this.buckets.set(id, paths.bucket);
      await this.register(writer);
      return writer;
    } catch (error) {
      await quietly(() => handle.close());
      await release();
      throw error;
    }
  }

  private async register(writer: Writer): Promise<void> {
    this.writers.set(writer.id, writer);
    if (this.writers.size <= this.maxOpenWriters) return;
    for (const [id] of this.writers) {
      if (this.writers.size <= this.maxOpenWriters) break;
      if (id !== writer.id && !this.busy(id)) await quietly(() => this.retireWriter(id, true));
    }
  }

  /** Syncs what relaxed mode owes, refreshes the sidecar, closes the descriptor, releases the lock. */
  private async retireWriter(id: string, refresh: boolean): Promise<void> {
    const writer = this.writers.get(id);
    if (writer === undefined) {
      // An eviction may still be releasing this session's lock: let it finish first.
      await this.retiring.get(id)?.catch(() => undefined);
      return;
    }
    this.writers.delete(id);
    const retired = this.retire(writer, refresh);
    this.retiring.set(id, retired);
    try {
      await retired;
    } finally {
      if (this.retiring.get(id) === retired) this.retiring.delete(id);
    }
  }

  private async retire(writer: Writer, refresh: boolean): Promise<void> {
    const id = writer.id;
    let failure: unknown;
    if (writer.handle !== undefined && writer.unsynced) {
      try {
        await writer.handle.datasync();
      } catch (error) {
        failure = toIoError(error, `syncing ${writer.paths.log}`, id);
      }
    }
    if (refresh && failure === undefined && writer.size !== writer.sidecarSize) {
      await quietly(() => this.refreshSidecar(writer));
    }
    const { handle, lock } = writer;
    if (handle !== undefined) await quietly(() => handle.close());
    if (lock !== undefined) await quietly(() => lock.release());
    if (failure !== undefined) throw failure;
  }

  private holderFor(id: string): LockHolder {
    return {
      busy: () => this.busy(id),
      release: () => this.exclusive(id, () => this.retireWriter(id, true)),
    };
  }

  private async refreshSidecar(writer: Writer): Promise<void> {
    const summary = await this.currentSummary(writer.paths, writer.id, writer.size);
    await writeSidecar(
      this.fs,
      writer.paths.dir,
      writer.paths.summary,
      { logSize: writer.size, summary },
      {
        syncDir: false,
        sessionId: writer.id,
      },
    );
    writer.sidecarSize = writer.size;
  }

  /** A writer for load's repair; undefined when another live writer owns the session (its torn bytes are a write in flight). */
  private async writerForRepair(id: string, torn: boolean, cut: boolean): Promise<Writer | undefined> {
    if (torn && this.writers.has(id)) await this.retireWriter(id, false);
    try {
      const writer = await this.ensureWriter(id);
      if (writer === undefined) throw errors.notFound(id);
      return writer;
    } catch (error) {
      if (!cut && isTidemarkError(error, 'CONFLICT')) return undefined;
      throw error;
    }
  }

  /**
   * `tail: 'cut'`: moves the events after the last boundary to quarantine. When the boundary ends
   * a batch the log is truncated in place; when it sits inside a batch, that batch must be
   * re-framed, so the log is rewritten as a new file and renamed over the old one (atomic).
   */
  private async cutTail(writer: Writer): Promise<{ cutEvents: number; quarantinedAt: string } | undefined> {
    const id = writer.id;
    const log = await this.readWhole(writer.paths, id);
    if (log.end.problem !== undefined) throw problemError(log.end.problem, writer.paths.log, id);
    const events = flatten(log.batches);
    const state = commitStateOf(events, this.isBoundary);
    if (!state.interrupted) return undefined;
    const firstCut = state.committedSeq + 1;
    const batch = log.batches.find((b) => b.events[b.events.length - 1]!.seq >= firstCut)!;
    const handle = writer.handle!;
    const quarantinedAt = await quarantineRange(
      this.fs,
      this.root,
      id,
      'tail',
      handle,
      batch.offset,
      writer.size - batch.offset,
    );
    const inPlace = batch.events[0]!.seq === firstCut;
    const kept = batch.events
      .filter((e) => e.seq < firstCut)
      .map((event) => ({ json: JSON.stringify(event) }));
    const reframed = inPlace
      ? undefined
      : Buffer.from(encodeBatch(kept, state.committedSeq, batch.at), 'utf8');
    const newSize = batch.offset + (reframed?.length ?? 0);
    // As in the reference model a cut changes the counts and the commit state only. The sidecar is
    // written first: if a crash stops the cut half way it still describes a prefix of the log.
    const summary: SessionSummary = {
      ...log.summary!,
      eventCount: firstCut,
      ...commitStateOf(events.slice(0, firstCut), this.isBoundary),
    };
    await writeSidecar(
      this.fs,
      writer.paths.dir,
      writer.paths.summary,
      { logSize: newSize, summary },
      {
        syncDir: true,
        sessionId: id,
      },
    );
    try {
      if (reframed === undefined) {
        await io(`truncating ${writer.paths.log}`, id, () => handle.truncate(batch.offset));
        await io(`syncing ${writer.paths.log}`, id, () => handle.datasync());
      } else {
        await publishFile(
          this.fs,
          writer.paths.dir,
          writer.paths.log,
          async (out) => {
            const chunk = new Uint8Array(1024 * 1024);
            for (let copied = 0; copied < batch.offset; ) {
              const n = await handle.read(chunk, 0, Math.min(chunk.length, batch.offset - copied), copied);
              if (n === 0)
                throw Object.assign(new Error('log shrank while being rewritten'), { code: 'EIO' });
              await writeAll(out, chunk.subarray(0, n), copied);
              copied += n;
            }
            await writeAll(out, reframed, batch.offset);
          },
          'rename',
          id,
        );
        await quietly(() => handle.close());
        writer.handle = undefined;
        writer.size = newSize;
        await this.reopenHandle(writer);
      }
    } catch (error) {
      // The log may be shortened or replaced by now: this writer's descriptor, size and next seq
      // no longer describe it. Drop it, so that the next use rescans the log.
      await quietly(() => this.retireWriter(id, false));
      throw error;
    }
    writer.size = newSize;
    writer.nextSeq = firstCut;
    writer.sidecarSize = newSize;
    return { cutEvents: events.length - firstCut, quarantinedAt };
  }

  /** `repair({ dropCorrupt })`: quarantines everything from the end of the last good batch of a corrupt log. */
  private async dropCorrupt(
    id: string,
    paths: SessionPaths,
  ): Promise<{ bytes: number; path: string } | undefined> {
    await quietly(() => this.retireWriter(id, false));
    await this.assertRealBucket(paths, id);
    const lock = await this.lockSession(paths, id);
    try {
      const handle = await io(`opening ${paths.log}`, id, () => this.fs.open(paths.log, 'r+'));
      try {
        const scanned = await scanHandle(handle, `reading ${paths.log}`, id, {});
        // The same reading as load's: a tear inside what the sidecar counted is damage to drop.
        const end = await this.settledAgainstSidecar(scanned, paths, id);
        if (end.problem === undefined || end.problem.kind !== 'corrupt' || end.header === undefined)
          return undefined;
        const size = await io(`inspecting ${paths.log}`, id, () => handle.size());
        const path = await quarantineRange(
          this.fs,
          this.root,
          id,
          'torn',
          handle,
          end.committedBytes,
          size - end.committedBytes,
        );
        await io(`truncating ${paths.log}`, id, () => handle.truncate(end.committedBytes));
        await io(`syncing ${paths.log}`, id, () => handle.datasync());
        return { bytes: size - end.committedBytes, path };
      } finally {
        await quietly(() => handle.close());
      }
    } finally {
      if (lock !== undefined) await quietly(() => lock.release());
    }
  }

  // ---------------------------------------------------------------- reading

  /**
   * Streams the events of `fromSeq..toSeq` by byte positions, so another instance or process may
   * rewrite the log under the stream: repair a torn tail (truncate, then append), cut a tail,
   * delete the session. Bytes read at successive positions then need not come from one version of
   * the log, and the sidecar may describe a newer one: a tear or CORRUPT seen so may be an artefact
   * of the rewrite. So an anomaly ends the stream only once the log as it is now confirms it:
   * reopened by path, the log must still hold the last committed batch the stream took in (the
   * {@link StreamMark}), else it was rewritten under the stream, which ends there; if it does, the
   * sidecar is read again, then the bytes after that batch are read and scanned again. Only an
   * anomaly that {@link MAX_REREADS} such re-reads meet at the same place is reported.
   */
  private async *readEvents(id: string, fromSeq: number, toSeq: number): AsyncGenerator<SessionEvent> {
    const paths = await this.locate(id);
    if (paths === undefined) throw errors.notFound(id);
    const opened = await ioOrAbsent(`opening ${paths.log}`, id, () => this.fs.open(paths.log, 'r'));
    if (opened === undefined) throw errors.notFound(id);
    let handle: FileHandlePort = opened;
    this.readers.add(handle);
    try {
      const buffer = Buffer.allocUnsafe(256 * 1024);
      const keeper = new MarkKeeper();
      let scanner = new LogScanner();
      let position = 0;
      let header: LogHeader | undefined;
      /** The sidecar as read before the current pass (none before the first). */
      let sidecar: Sidecar | undefined;
      let rereads = 0;
      let rereadAt: number | undefined;
      for (;;) {
        for (;;) {
          // Resumed after close(): the descriptor is gone, and the answer is CLOSED, not an IO error.
          this.assertOpen();
          const from = position;
          const n = await io(`reading ${paths.log}`, id, () => handle.read(buffer, 0, buffer.length, from));
          if (n === 0) break;
          const chunk = buffer.subarray(0, n);
          const batches = scanner.push(chunk);
          keeper.advance(chunk, position, batches);
          position += n;
          header ??= scanner.headerLine?.header;
          if (header !== undefined && header.meta.id !== id) throw foreignLog(paths.log, id, header.meta.id);
          for (const batch of batches) {
            for (const event of batch.events) {
              this.assertOpen();
              if (event.seq > toSeq) return;
              if (event.seq >= fromSeq) yield event;
            }
          }
          if (scanner.failed) break;
        }
        const end = scanner.finish();
        if (end.problem === undefined && end.torn === undefined) return;
        // A header newer than this code is no artefact of a rewrite: every writer keeps the header.
        if (end.problem?.kind === 'unsupported-format') throw problemError(end.problem, paths.log, id);
        // The log as it is now, through a new descriptor: the path may name another file by now.
        const current = await ioOrAbsent(`opening ${paths.log}`, id, () => this.fs.open(paths.log, 'r'));
        const previous = handle;
        if (this.readers.delete(previous)) await quietly(() => previous.close());
        if (current === undefined) return; // deleted under the stream: it ends there
        handle = current;
        this.readers.add(current);
        this.assertOpen();
        const mark = keeper.mark;
        if (mark !== undefined && !(await this.markHolds(current, mark, paths, id))) return;
        if (mark?.offset !== rereadAt) {
          rereadAt = mark?.offset;
          rereads = 0;
        }
        if (rereads === MAX_REREADS) {
          // Met at the same place by every re-read: judged as load judges it, against the sidecar
          // read before this pass (a tear is only a tail past what that sidecar counted).
          const settled = settleTear(end, this.committedSizeOf(sidecar, header));
          if (settled.problem !== undefined) throw problemError(settled.problem, paths.log, id);
          return; // a torn tail: not part of the log
        }
        rereads++;
        // Before the pass it judges: a sidecar read after the scan may count bytes written later.
        sidecar = await this.readSidecar(paths, id);
        position = keeper.rewind();
        if (mark === undefined) {
          header = undefined;
          scanner = new LogScanner();
        } else {
          const start = { offset: mark.offset, nextSeq: mark.nextSeq };
          scanner = new LogScanner({ start, formatVersion: header!.version });
        }
      }
    } finally {
      const last = handle;
      if (this.readers.delete(last)) await quietly(() => last.close());
    }
  }

  /** True when the log open on `handle` still holds the batch end `mark` where the stream found it. */
  private async markHolds(
    handle: FileHandlePort,
    mark: StreamMark,
    paths: SessionPaths,
    id: string,
  ): Promise<boolean> {
    const bytes = new Uint8Array(mark.tail.length);
    const at = mark.offset - bytes.length;
    for (let filled = 0; filled < bytes.length; ) {
      const n = await io(`reading ${paths.log}`, id, () =>
        handle.read(bytes, filled, bytes.length - filled, at + filled),
      );
      if (n === 0) return false; // shorter than the mark: cut or truncated under the stream
      filled += n;
    }
    return markMatches(mark, bytes);
  }

  private async readWhole(paths: SessionPaths, id: string): Promise<WholeLog> {
    const handle = await ioOrAbsent(`opening ${paths.log}`, id, () => this.fs.open(paths.log, 'r'));
    if (handle === undefined) throw errors.notFound(id);
    try {
      // A fault reading the sidecar is IO: rebuilding from the log would drop what only update set.
      const sidecar = await this.readSidecar(paths, id);
      const batches: ScanBatch[] = [];
      const { header, end, folder } = await this.scanFolding(handle, paths, id, sidecar, (batch) => {
        batches.push(batch);
      });
      return { header, batches, end, summary: folder.result() };
    } finally {
      await quietly(() => handle.close());
    }
  }

  /**
   * Scans a whole log once, folding its summary as it goes (anchored on `sidecar` where the sidecar
   * still matches the log), and hands each committed batch to `onBatch` as well.
   */
  private async scanFolding(
    handle: FileHandlePort,
    paths: SessionPaths,
    id: string,
    sidecar: Sidecar | undefined,
    onBatch?: (batch: ScanBatch) => void,
  ): Promise<{ header: LogHeader | undefined; end: ScanEnd; folder: SummaryFolder }> {
    const folder = new SummaryFolder(sidecar, this.isBoundary);
    let header: LogHeader | undefined;
    const scanned = await scanHandle(handle, `reading ${paths.log}`, id, {
      onHeader: (h, endOffset) => {
        header = h;
        folder.header(h, endOffset);
      },
      onBatch: (batch) => {
        folder.batch(batch);
        onBatch?.(batch);
        return true;
      },
    });
    return { header, end: settleTear(scanned, this.committedSizeOf(sidecar, header)), folder };
  }

  /**
   * What a sidecar counted as committed, when it describes this very log: same id (readSidecar) and
   * same createdAt. A sidecar left behind by an earlier session of the same id (a delete whose
   * unlink of it was lost in a crash) says nothing about this log.
   */
  private committedSizeOf(sidecar: Sidecar | undefined, header: LogHeader | undefined): number | undefined {
    if (sidecar === undefined || header === undefined) return undefined;
    return sidecar.summary.createdAt === header.meta.createdAt ? sidecar.logSize : undefined;
  }

  /**
   * {@link settleTear} for a scan made without the sidecar at hand: reads it only when the scan
   * ended torn (scanFolding, which has it, settles by itself).
   */
  private async settledAgainstSidecar(end: ScanEnd, paths: SessionPaths, id: string): Promise<ScanEnd> {
    if (end.torn === undefined) return end;
    return settleTear(end, this.committedSizeOf(await this.readSidecar(paths, id), end.header));
  }

  /** The sidecar, or undefined when it is missing or malformed. A fault reading it is IO. */
  private async readSidecar(paths: SessionPaths, id: string): Promise<Sidecar | undefined> {
    const bytes = await ioOrAbsent(`reading ${paths.summary}`, id, () =>
      this.fs.readFile(paths.summary).catch((error: unknown) => {
        // Too large to be a sidecar (over 2 GiB), or not a file of ours at all (a planted link:
        // ELOOP under O_NOFOLLOW; a FIFO or device: EINVAL): malformed content, not a storage
        // fault. The summary is rebuilt from the log and the next write replaces the entry.
        const code = errnoOf(error);
        if (code === 'ERR_FS_FILE_TOO_LARGE' || code === 'ELOOP' || code === 'EINVAL') return undefined;
        throw error;
      }),
    );
    const sidecar = bytes === undefined ? undefined : decodeSidecar(bytes);
    return sidecar?.summary.id === id ? sidecar : undefined; // another session's (copied) sidecar: ignored
  }

  /**
   * The summary as of `knownSize` bytes of log (default: its current size): the sidecar when
   * current, else the sidecar brought forward over the batches after it, else rebuilt from the log.
   */
  private async currentSummary(paths: SessionPaths, id: string, knownSize?: number): Promise<SessionSummary> {
    // A fault reading the sidecar is IO, never "no sidecar": a summary rebuilt from the log alone
    // lacks the fields only update sets, and update or a refresh would then store it without them.
    const sidecar = await this.readSidecar(paths, id);
    const size =
      knownSize ??
      (await ioOrAbsent(`inspecting ${paths.log}`, id, () => this.fs.lstat(paths.log)))?.size ??
      Number.NaN;
    if (Number.isNaN(size)) throw errors.notFound(id);
    if (sidecar !== undefined && sidecar.logSize === size) return sidecar.summary;
    const handle = await ioOrAbsent(`opening ${paths.log}`, id, () => this.fs.open(paths.log, 'r'));
    if (handle === undefined) throw errors.notFound(id);
    try {
      if (sidecar !== undefined && sidecar.logSize > 0 && sidecar.logSize < size) {
        const forward = await this.bringForward(handle, paths, id, sidecar);
        if (forward !== undefined) return forward;
      }
      const { end, folder } = await this.scanFolding(handle, paths, id, sidecar);
      if (end.problem !== undefined) throw problemError(end.problem, paths.log, id);
      return folder.result()!;
    } finally {
      await quietly(() => handle.close());
    }
  }

  /**
   * Folds only the batches after the sidecar's `logSize`; undefined when that is not a boundary,
   * or when what follows is damage (the full scan then reports it).
   */
  private async bringForward(
    handle: FileHandlePort,
    paths: SessionPaths,
    id: string,
    sidecar: Sidecar,
  ): Promise<SessionSummary | undefined> {
    const before = new Uint8Array(1);
    const n = await io(`reading ${paths.log}`, id, () => handle.read(before, 0, 1, sidecar.logSize - 1));
    if (n !== 1 || before[0] !== 0x0a) return undefined;
    const fold = async (formatVersion: number) => {
      const folder = SummaryFolder.fromSidecar(sidecar, this.isBoundary);
      let first = true;
      let aligned = true;
      const end = await scanHandle(
        handle,
        `reading ${paths.log}`,
        id,
        {
          onBatch: (batch) => {
            if (first && batch.offset !== sidecar.logSize) aligned = false;
            first = false;
            folder.batch(batch);
            return aligned;
          },
        },
        { start: { offset: sidecar.logSize, nextSeq: sidecar.summary.eventCount }, formatVersion },
      );
      return { summary: aligned && end.problem === undefined ? folder.result() : undefined, end };
    };
    const folded = await fold(1);
    if (folded.summary === undefined || folded.end.torn === undefined) return folded.summary;
    // A torn end is a tail or damage depending on the log's format version and on whether the
    // sidecar is this log's (settleTear): both come from the header line, so read just that, not
    // the whole log (list must not cost a crashed session's full length on every call).
    const header = await this.readHeaderLine(handle, paths, id);
    if (header === undefined) return undefined;
    const again = header.version >= 2 ? await fold(header.version) : folded;
    if (again.summary === undefined) return undefined;
    return settleTear(again.end, this.committedSizeOf(sidecar, header)).problem === undefined
      ? again.summary
      : undefined;
  }

  /** The header of a log, from its first line alone; undefined when it cannot be read that way. */
  private async readHeaderLine(
    handle: FileHandlePort,
    paths: SessionPaths,
    id: string,
  ): Promise<LogHeader | undefined> {
    const buffer = Buffer.allocUnsafe(HEADER_PROBE_BYTES);
    const n = await io(`reading ${paths.log}`, id, () => handle.read(buffer, 0, buffer.length, 0));
    const newline = buffer.subarray(0, n).indexOf(0x0a);
    if (newline === -1) return undefined;
    const decoded = decodeHeaderLine(buffer, 0, newline);
    return decoded.ok ? decoded.value : undefined;
  }

  /** list's view of one session; undefined when it vanished meanwhile. */
  private async listedSummary(paths: SessionPaths, id: string): Promise<SessionSummary | undefined> {
    const stat = await ioOrAbsent(`inspecting ${paths.log}`, id, () => this.fs.lstat(paths.log));
    if (stat === undefined) return undefined;
    try {
      const summary = await this.currentSummary(paths, id, stat.size);
      if (summary.id !== id) throw foreignLog(paths.log, id, summary.id);
      return summary;
    } catch (error) {
      if (isTidemarkError(error, 'NOT_FOUND')) return undefined;
      throw error;
    }
  }

  // ---------------------------------------------------------------- locating

  /**
   * The paths of a materialized session, or undefined when it truly does not exist. Looks in the
   * remembered bucket first, then in every bucket: an id can be found without its cwd. Only ENOENT
   * counts as absence; a bucket that cannot be read fails the lookup with IO.
   */
  private async locate(id: string): Promise<SessionPaths | undefined> {
    const tried = new Set<string>();
    const pendingCwd = this.pending.get(id)?.meta.cwd;
    const hints = [this.buckets.get(id), this.pending.has(id) ? bucketOf(pendingCwd) : undefined];
    for (const bucket of hints) {
      if (bucket === undefined || tried.has(bucket)) continue;
      tried.add(bucket);
      const paths = await this.logIn(bucket, id);
      if (paths !== undefined) return paths;
    }
    const paths = await this.logInBuckets(id, tried);
    if (paths === undefined) this.buckets.delete(id);
    return paths;
  }

  private async logIn(bucket: string, id: string): Promise<SessionPaths | undefined> {
    const paths = sessionPaths(this.root, bucket, id);
    const stat = await ioOrAbsent(`inspecting ${paths.log}`, id, () => this.fs.lstat(paths.log));
    if (stat === undefined) return undefined;
    this.buckets.set(id, bucket);
    return paths;
  }

  /**
   * Refuses a bucket that is not a real directory before anything is written in it: O_NOFOLLOW
   * guards only the last path component, and a planted bucket symlink would redirect every write.
   */
  private async assertRealBucket(paths: SessionPaths, id: string): Promise<void> {
    const stat = await io(`inspecting ${paths.dir}`, id, () => this.fs.lstat(paths.dir));
    if (stat.isDirectory() && !stat.isSymbolicLink()) return;
    throw toIoError(
      Object.assign(new Error(`${paths.dir} is not a directory (a link?)`), { code: 'ELOOP' }),
      `opening ${paths.dir}`,
      id,
    );
  }

  /**
   * Takes the writer lock of `id` (nothing with `lock: 'none'`). Locks live under the root, one per
   * id, not in the session's bucket: writers that create one id under two cwds must exclude each
   * other too.
   */
  private async lockSession(paths: SessionPaths, id: string): Promise<HeldLock | undefined> {
    if (!this.locking) return undefined;
    // Checked every time, as buckets are: `.locks` may have been removed since, or replaced by a
    // link, which lock files must never be written through.
    await ensureDir(this.fs, dirname(paths.lock), this.root, id);
    return acquireLock(this.fs, paths.lock, id, this.holderFor(id));
  }

  /** The log of `id` in the first bucket (in name order) not in `skip` that holds one. */
  private async logInBuckets(id: string, skip: ReadonlySet<string>): Promise<SessionPaths | undefined> {
    const names = await ioOrAbsent(`reading ${this.root}`, id, () => this.fs.readdir(this.root));
    for (const bucket of (names ?? []).filter(isBucketName).sort()) {
      if (skip.has(bucket)) continue;
      const paths = await this.logIn(bucket, id);
      if (paths !== undefined) return paths;
    }
    return undefined;
  }

  private async ensureRoot(id: string): Promise<void> {
    const stat = await ioOrAbsent(`inspecting ${this.root}`, id, () => this.fs.lstat(this.root));
    if (stat !== undefined) {
      if (!stat.isDirectory()) {
        throw toIoError(
          Object.assign(new Error('not a directory'), { code: 'ENOTDIR' }),
          `opening ${this.root}`,
          id,
        );
      }
      if (!this.rootEntrySynced) {
        // Found, not made: its creator (`mkdir -p`) may have been killed before syncing the new
        // entries, and every log published under it would vanish with them at a power loss. So
        // each ancestor's entry is synced, once per store instance.
        for (let dir = this.root; dir !== dirname(dir); dir = dirname(dir)) await this.syncParentOf(dir, id);
        this.rootEntrySynced = true;
      }
      return;
    }
    // Every directory the recursive mkdir creates is a new entry in its parent: fsync each parent,
    // top down, or power loss may drop a new ancestor and with it the first acknowledged batch.
    const created = [this.root];
    for (let dir = dirname(this.root); dir !== dirname(dir); dir = dirname(dir)) {
      if ((await ioOrAbsent(`inspecting ${dir}`, id, () => this.fs.lstat(dir))) !== undefined) break;
      created.unshift(dir);
    }
    await io(`creating ${this.root}`, id, () => this.fs.mkdir(this.root, { recursive: true, mode: 0o700 }));
    for (const dir of created) await this.syncParentOf(dir, id);
    this.rootEntrySynced = true;
  }

  /**
   * Makes the entry of `dir` in its parent durable. A parent this user may not read (EACCES,
   * EPERM: writable and searchable but not readable) cannot be opened to sync; keeping it durable
   * is then its owner's affair, and refusing every append would help no one.
   */
  private async syncParentOf(dir: string, id: string): Promise<void> {
    try {
      await this.fs.syncDir(dirname(dir));
    } catch (error) {
      const errno = errnoOf(error);
      if (errno !== 'EACCES' && errno !== 'EPERM') throw toIoError(error, `syncing ${dirname(dir)}`, id);
    }
  }

  // ---------------------------------------------------------------- plumbing

  private assertOpen(): void {
    if (this.closed) throw errors.closed();
  }

  private busy(id: string): boolean {
    return (this.queues.get(id)?.depth ?? 0) > 0;
  }

  /** Runs `step` after every earlier operation of this instance on session `id`. */
  private async exclusive<T>(id: string, step: () => Promise<T>): Promise<T> {
    let queue = this.queues.get(id);
    if (queue === undefined) {
      queue = { tail: Promise.resolve(), depth: 0 };
      this.queues.set(id, queue);
    }
    const previous = queue.tail;
    let done!: () => void;
    queue.tail = new Promise<void>((resolve) => {
      done = resolve;
    });
    queue.depth++;
    try {
      await previous;
      return await step();
    } catch (error) {
      throw isTidemarkError(error) ? error : toIoError(error, `operating on ${id}`, id);
    } finally {
      done();
      queue.depth--;
      if (queue.depth === 0 && this.queues.get(id) === queue) this.queues.delete(id);
    }
  }
}

/** CORRUPT: the log of `id` has the header of another session (a copied or renamed file). */
function foreignLog(file: string, id: string, owner: string): TidemarkError {
  return errors.corrupt(`session ${id}: ${file} holds the log of session ${owner}`, { file, offset: 0 }, id);
}

function flatten(batches: readonly ScanBatch[]): SessionEvent[] {
  const events: SessionEvent[] = [];
  for (const batch of batches) for (const event of batch.events) events.push(event);
  return events;
}

async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  step: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await step(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * Opens the crash-safe JSONL store at `options.root`. Opening touches nothing on disk: the root is
 * created by the first append.
 */
export async function openJsonlStore(options: JsonlStoreOptions = {}): Promise<JsonlStore> {
  return new JsonlStore(options);
}
