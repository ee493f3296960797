// A third-party backend written from tidemark's published packages alone: one JSON file per
// session (`<root>/<id>.json`), every write a whole new file published by temp file + fsync +
// rename + directory fsync, under a per-session lock file. It is the example of
// docs/architecture.md#writing-a-backend: the class extends core's SessionStoreBase and
// implements only the storage hooks; every file access goes through core's FileSystem port.
//
// Every write rewrites the whole file, so an append costs the size of the session: fine for an
// example and for short sessions, not for logs of many megabytes (use @tidemark/jsonl there).
import {
  applyPatch,
  assertSameEvents,
  backendOptionNames,
  commitStateOf,
  deleteConflict,
  emptySummary,
  errors,
  isENOENT,
  isTidemarkError,
  loadedSession,
  nextUpdatedAt,
  nodeFileSystem,
  nowIso,
  pageOf,
  planAppend,
  SessionStoreBase,
  summaryAfterAppend,
  summaryAfterCut,
  toIoError,
} from '@tidemark/core';
import { decodeDocument, encodeDocument, FORMAT_VERSION } from './document.js';
import { readIfPresent, removeIfPresent, withLockFile, writeAll } from './files.js';

/**
 * @typedef {import('@tidemark/core').StoreOptions & { root: string, fs?: import('@tidemark/core').FileSystem }} JsonDirStoreOptions
 * @typedef {import('./document.js').SessionDocument} SessionDocument
 * @typedef {import('@tidemark/core').PreparedEvent} PreparedEvent
 * @typedef {import('@tidemark/core').SessionEvent} SessionEvent
 */

/** The options this backend adds to the shared ones; any other name is INVALID (contract §6). */
export const JSON_DIR_OPTION_NAMES = backendOptionNames(/** @type {const} */ ({ root: true, fs: true }));

const QUARANTINE = '.quarantine';

/** A json-dir store. Open it with {@link openJsonDirStore}. */
export class JsonDirStore extends SessionStoreBase {
  formatVersion = FORMAT_VERSION;

  /** @param {JsonDirStoreOptions} options */
  constructor(options) {
    // The option names make a misspelt `root` INVALID instead of a store somewhere else.
    super(options, 'openJsonDirStore', JSON_DIR_OPTION_NAMES);
    if (typeof options.root !== 'string' || options.root === '')
      throw errors.invalid('openJsonDirStore: root must be a non-empty path');
    /** The directory holding one file per session. */
    this.root = options.root.replace(/\/+$/, '') || '/';
    /** @type {import('@tidemark/core').FileSystem} */
    this.fs = options.fs ?? nodeFileSystem;
  }

  // ---- paths ------------------------------------------------------------------------------
  /** @param {string} id */
  fileOf(id) {
    return `${this.root}/${id}.json`;
  }
  /** Ids never start with a dot, so dot files cannot be sessions. @param {string} id */
  tempOf(id) {
    return `${this.root}/.${id}.tmp`;
  }
  /** @param {string} id */
  lockOf(id) {
    return `${this.root}/.${id}.lock`;
  }

  // ---- file steps -------------------------------------------------------------------------

  /**
   * Makes the temp file's bytes durable before the rename publishes them. The broken variant
   * (broken-store.js) skips this: a power loss after the rename can then leave an empty file.
   * @param {import('@tidemark/core').FileHandlePort} handle
   */
  async syncTempFile(handle) {
    await handle.sync();
  }

  /** The session's bytes and document; `undefined` when it is not stored. @param {string} id */
  async readDocument(id) {
    const file = this.fileOf(id);
    let bytes;
    try {
      bytes = await readIfPresent(this.fs, file);
    } catch (error) {
      throw toIoError(error, `reading ${file}`, id);
    }
    if (bytes === undefined) return undefined;
    return { bytes, doc: decodeDocument(bytes, file, id) };
  }

  /**
   * Publishes `bytes` as `file`: write a temp file, sync it, rename it over `file`, sync the
   * directory (strict). Nothing is visible unless the rename ran: `progress.renaming` says
   * whether it was attempted (a rename that reported a failure may still have happened).
   * @param {string} id @param {string} file @param {Uint8Array} bytes
   * @param {{ renaming: boolean }} [progress]
   */
  async publish(id, file, bytes, progress = { renaming: false }) {
    const temp = this.tempOf(id);
    try {
      // Under the session's lock no one else writes this temp file: what is there is left over.
      await removeIfPresent(this.fs, temp);
      const handle = await this.fs.open(temp, 'wx');
      try {
        await writeAll(handle, bytes);
        await this.syncTempFile(handle);
      } finally {
        await handle.close();
      }
      progress.renaming = true;
      await this.fs.rename(temp, file);
      if (this.settings.durability === 'strict') await this.fs.syncDir(this.root);
    } catch (error) {
      await removeIfPresent(this.fs, temp).catch(() => undefined);
      throw toIoError(error, `writing ${file}`, id);
    }
  }

  /**
   * Replaces the session file with `doc`. A write that fails after its rename is undone (the
   * previous bytes put back, or the new file removed): a rejected write leaves nothing visible.
   * @param {string} id @param {SessionDocument} doc @param {Uint8Array | undefined} previous
   */
  async writeDocument(id, doc, previous) {
    const file = this.fileOf(id);
    const progress = { renaming: false };
    try {
      await this.publish(id, file, encodeDocument(doc), progress);
    } catch (error) {
      if (!progress.renaming) throw error; // failed before the rename: nothing to undo
      try {
        if (previous === undefined) await removeIfPresent(this.fs, file);
        else await this.publish(id, file, previous);
        await this.fs.syncDir(this.root);
      } catch {
        // Undo failed too (a persistent fault): the write is in doubt, as the error says.
      }
      throw error;
    }
  }

  /** @template T @param {string} id @param {() => Promise<T>} fn */
  locked(id, fn) {
    return withLockFile(this.fs, this.lockOf(id), id, fn);
  }

  /** Moves `events` to a new quarantine file; resolves its path. @param {string} id @param {SessionEvent[]} events */
  async quarantine(id, events) {
    const dir = `${this.root}/${QUARANTINE}`;
    const path = `${dir}/${id}.${Date.now()}.${Math.random().toString(36).slice(2, 8)}.json`;
    try {
      await this.fs.mkdir(dir, { recursive: true });
      const handle = await this.fs.open(path, 'wx');
      try {
        await writeAll(handle, new TextEncoder().encode(`${JSON.stringify(events)}\n`));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await this.fs.syncDir(dir);
      await this.fs.syncDir(this.root);
    } catch (error) {
      throw toIoError(error, `quarantining the tail of ${id}`, id);
    }
    return path;
  }

  /** Cuts the interrupted tail into quarantine; resolves what was cut. @param {string} id */
  async cutTail(id) {
    const found = await this.readDocument(id);
    if (found === undefined) throw errors.notFound(id);
    const { doc, bytes } = found;
    const { committedSeq, interrupted } = commitStateOf(doc.events, this.settings.isBoundary);
    if (!interrupted) return { doc, cut: 0, quarantinedAt: undefined };
    const kept = doc.events.slice(0, committedSeq + 1);
    const quarantinedAt = await this.quarantine(id, doc.events.slice(committedSeq + 1));
    const next = {
      ...doc,
      events: kept,
      summary: summaryAfterCut(doc.summary, kept, this.settings.isBoundary),
    };
    await this.writeDocument(id, next, bytes);
    return { doc: next, cut: doc.events.length - kept.length, quarantinedAt };
  }

  // ---- storage hooks ----------------------------------------------------------------------

  /** @param {string} id */
  async storageHas(id) {
    try {
      return (await this.fs.lstat(this.fileOf(id))).isFile();
    } catch (error) {
      if (isENOENT(error)) return false; // only proven absence is false
      throw toIoError(error, `checking ${this.fileOf(id)}`, id);
    }
  }

  /**
   * @param {string} id @param {readonly PreparedEvent[]} batch
   * @param {import('@tidemark/core').Reservation | undefined} reservation
   */
  async storageAppend(id, batch, reservation) {
    return this.locked(id, async () => {
      const found = await this.readDocument(id);
      if (found === undefined && reservation === undefined) throw errors.notFound(id);
      const stored = found?.doc.events ?? [];
      const nextSeq = stored.length;
      const plan = planAppend(id, nextSeq, batch);
      if (plan.kind === 'compare') {
        assertSameEvents(id, stored.slice(plan.fromSeq, plan.toSeq + 1), batch);
        return { nextSeq };
      }
      const now = nowIso();
      const appended = batch.map((item) => item.event);
      let doc;
      if (found === undefined) {
        // The first batch: the session appears with its header and the fields kept since create.
        const { meta: reserved, patch } = /** @type {import('@tidemark/core').Reservation} */ (reservation);
        const meta = { ...reserved, formatVersion: FORMAT_VERSION };
        const summary = applyPatch(emptySummary(reserved), patch, now);
        doc = {
          meta,
          summary: summaryAfterAppend(summary, appended, this.settings.isBoundary, now),
          events: appended,
        };
      } else {
        const { summary } = found.doc;
        const updatedAt = nextUpdatedAt(summary.updatedAt, now);
        doc = {
          meta: found.doc.meta,
          summary: summaryAfterAppend(summary, appended, this.settings.isBoundary, updatedAt),
          events: [...found.doc.events, ...appended],
        };
      }
      await this.writeDocument(id, doc, found?.bytes);
      return { nextSeq: nextSeq + batch.length };
    });
  }

  /** @param {string} id @param {'keep' | 'cut'} tail */
  async storageLoad(id, tail) {
    if (tail === 'cut') {
      const { doc, cut, quarantinedAt } = await this.locked(id, () => this.cutTail(id));
      const state = commitStateOf(doc.events, this.settings.isBoundary);
      const recovered = cut > 0 ? { cutEvents: cut, quarantinedAt } : undefined;
      return loadedSession(doc.meta, doc.summary, doc.events, state, recovered);
    }
    const found = await this.readDocument(id);
    if (found === undefined) throw errors.notFound(id);
    const { doc } = found;
    return loadedSession(
      doc.meta,
      doc.summary,
      doc.events,
      commitStateOf(doc.events, this.settings.isBoundary),
    );
  }

  /** @param {string} id @param {number} fromSeq @param {number} toSeq */
  async *storageRead(id, fromSeq, toSeq) {
    const found = await this.readDocument(id);
    if (found === undefined) throw errors.notFound(id);
    yield* found.doc.events.slice(fromSeq, toSeq + 1);
  }

  /** @param {import('@tidemark/core').ValidListQuery} query */
  async storageList(query) {
    let names;
    try {
      names = await this.fs.readdir(this.root);
    } catch (error) {
      throw toIoError(error, `listing ${this.root}`);
    }
    const summaries = [];
    const problems = [];
    for (const name of names) {
      if (name.startsWith('.') || !name.endsWith('.json')) continue;
      const id = name.slice(0, -'.json'.length);
      try {
        const found = await this.readDocument(id);
        if (found !== undefined) summaries.push(found.doc.summary); // absent: deleted meanwhile
      } catch (error) {
        // A session this store cannot describe is a problem on the page, never silently absent.
        problems.push({
          id,
          error: isTidemarkError(error) ? error : toIoError(error, `reading ${name}`, id),
        });
      }
    }
    return pageOf(summaries, query, problems);
  }

  /** @param {string} id @param {import('@tidemark/core').SummaryPatch} patch */
  async storageUpdate(id, patch) {
    return this.locked(id, async () => {
      const found = await this.readDocument(id);
      if (found === undefined) return undefined;
      const summary = applyPatch(found.doc.summary, patch, nextUpdatedAt(found.doc.summary.updatedAt));
      await this.writeDocument(id, { ...found.doc, summary }, found.bytes);
      return summary;
    });
  }

  /** @param {string} id @param {string | undefined} ifUpdatedAt */
  async storageDelete(id, ifUpdatedAt) {
    return this.locked(id, async () => {
      if (ifUpdatedAt !== undefined) {
        const found = await this.readDocument(id);
        if (found === undefined) return 'absent';
        const current = found.doc.summary.updatedAt;
        if (current !== ifUpdatedAt) throw deleteConflict(id, ifUpdatedAt, current);
      }
      try {
        await this.fs.unlink(this.fileOf(id));
        if (this.settings.durability === 'strict') await this.fs.syncDir(this.root);
      } catch (error) {
        if (isENOENT(error)) return 'absent';
        throw toIoError(error, `deleting ${this.fileOf(id)}`, id);
      }
      return 'deleted';
    });
  }

  async storageClose() {
    // Nothing to release: locks are held only for the length of one write.
  }

  /** @param {string} id @returns {Promise<import('@tidemark/core').SessionHealth>} */
  async storageVerify(id) {
    let found;
    try {
      found = await this.readDocument(id);
    } catch (error) {
      if (!isTidemarkError(error, 'CORRUPT')) throw error;
      /** @type {import('@tidemark/core').MaintenanceProblem} */
      const problem = { kind: 'corrupt', sessionId: id, message: error.message, file: this.fileOf(id) };
      return { sessionId: id, status: 'corrupt', eventCount: 0, problems: [problem] };
    }
    if (found === undefined) throw errors.notFound(id);
    const { events } = found.doc;
    const state = commitStateOf(events, this.settings.isBoundary);
    /** @type {import('@tidemark/core').SessionHealth} */
    const health = {
      sessionId: id,
      status: 'ok',
      eventCount: events.length,
      committedSeq: state.committedSeq,
      problems: [],
    };
    if (state.interrupted) {
      health.status = 'interrupted';
      const after = events.length - 1 - state.committedSeq;
      health.problems.push({
        kind: 'interrupted',
        sessionId: id,
        message: `interrupted turn: ${after} event(s) after the last boundary (seq ${state.committedSeq})`,
        seq: state.committedSeq + 1,
      });
    }
    return health;
  }

  /**
   * A damaged file cannot be salvaged (its checksum covers the whole session), so repair only
   * cuts an interrupted tail; a corrupt session stays CORRUPT.
   * @param {string} id @param {Required<import('@tidemark/core').RepairOptions>} options
   */
  async storageRepair(id, options) {
    const health = await this.storageVerify(id);
    if (health.status === 'corrupt')
      throw errors.corrupt(health.problems[0].message, { file: this.fileOf(id) }, id);
    /** @type {import('@tidemark/core').RepairReport} */
    const report = { sessionId: id, eventCount: health.eventCount ?? 0, removed: [], quarantined: [] };
    if (options.tail !== 'cut' || health.status !== 'interrupted') return report;
    const { doc, cut, quarantinedAt } = await this.locked(id, () => this.cutTail(id));
    if (cut === 0 || quarantinedAt === undefined) return report;
    report.removed.push({ ...health.problems[0], quarantinedAt });
    report.cutEvents = cut;
    report.eventCount = doc.events.length;
    report.quarantined.push(quarantinedAt);
    return report;
  }
}

/**
 * Opens a json-dir store in `root` (created when missing), one file per session.
 * @param {JsonDirStoreOptions} options
 * @returns {Promise<JsonDirStore>}
 * @throws TidemarkError INVALID for an unknown option name or a bad option; IO when `root` cannot be made.
 */
export function openJsonDirStore(options) {
  return openStore(new JsonDirStore(options));
}

/**
 * Makes the store's root (when missing) and checks it is a directory; resolves the store.
 * @template {JsonDirStore} S
 * @param {S} store
 * @returns {Promise<S>}
 */
export async function openStore(store) {
  try {
    await store.fs.mkdir(store.root, { recursive: true });
    if (!(await store.fs.lstat(store.root)).isDirectory())
      throw Object.assign(new Error(`${store.root} is not a directory`), { code: 'ENOTDIR' });
  } catch (error) {
    throw toIoError(error, `opening ${store.root}`);
  }
  return store;
}
