// Key rotation: every session of a store re-sealed under the keyring's current key, each one all or
// nothing, through a staging store, so that a crash or a kill at any instant leaves each session
// whole in the main store or in the staging store (or both), and the next run finishes the work.
//
// Per session S that is not wholly under the current key:
//   1. load S as stored and open it with the full keyring (a record that does not open fails S);
//   2. write S, sealed under the current key for the same id, into the staging store in one atomic
//      materialization (create, update of the pending session, ONE append), read it back, verify;
//   3. delete S from the main store, only the version loaded in 1 (`ifUpdatedAt`); a CONFLICT means
//      S changed meanwhile: the staging copy is dropped and S is retried by the next run;
//   4. write S from the staging copy into the main store the same atomic way, read it back, verify;
//   5. delete the staging copy.
// Between 3 and 4 the session is only in the staging store. A kill there leaves it there, and the
// next run puts it back first (see `resume` below). Readers in that window see NOT_FOUND: run rekey
// while the agents that write the store are stopped.
import { isTidemarkError, listAll, type SessionStore, TidemarkError } from '@tidemark/core';
import { sealedRuns } from '../batch.js';
import type { Keyring } from '../keyring.js';
import {
  eventsArePrefix,
  imageDigest,
  keyUse,
  loadStored,
  materialize,
  openImage,
  type SessionImage,
  type StoredImage,
  sealImage,
  wholly,
} from './image.js';

/** The steps of re-sealing one session, named for {@link RekeyOptions.onStep}. */
export type RekeyStep = 'stage' | 'delete' | 'restore' | 'unstage';

/** What happened to one session. */
export type RekeyOutcome =
  /** Re-sealed under the current key by this run (possibly finishing an interrupted run's work). */
  | 'resealed'
  /** Already wholly under the current key: nothing written. */
  | 'current'
  /** Changed (appended, updated or deleted) while it was being re-sealed; left as it is, retried by the next run. */
  | 'changed'
  /** Could not be re-sealed: see {@link RekeyReport.failed}. */
  | 'failed';

/** Progress of {@link rekeyStore}: once before the first session, then after each session. */
export interface RekeyProgress {
  /** Sessions finished so far. */
  done: number;
  /** Sessions to look at (the main store's and the staging store's, together). */
  total: number;
  /** The session just finished (absent on the first call). */
  id?: string;
  outcome?: RekeyOutcome;
  /** True when the session was left in the staging store by an earlier, interrupted run. */
  resumed?: boolean;
}

/** Options of {@link rekeyStore}. */
export interface RekeyOptions {
  /**
   * The store to re-seal, as stored: the raw store, never a sealed view of it (`SealedStore.inner`
   * when you hold one).
   */
  store: SessionStore;
  /** Every key the store's sessions may be sealed under; its current key is the one to re-seal under. */
  keyring: Keyring;
  /**
   * A store for the copies in flight, durable like the main one (the CLI uses a JSONL store beside
   * `$TIDEMARK_HOME`). Keep it between runs: after a kill it may hold the only copy of a session.
   * It is empty again after a complete run.
   */
  staging: SessionStore;
  /** Called before the first session and after each one. */
  onProgress?: (progress: RekeyProgress) => void;
  /**
   * Called before each step of each session (for tests that stop a run at a given step, and for
   * finer progress). A rejection stops that session there, as a crash would, and fails it.
   */
  onStep?: (id: string, step: RekeyStep) => void | Promise<void>;
}

/** A session that could not be looked at or re-sealed. */
export interface RekeyFailure {
  id: string;
  code: string;
  message: string;
}

/** What {@link rekeyStore} did. */
export interface RekeyReport {
  /** The key id sessions are now sealed under. */
  currentKeyId: string;
  /** Sessions looked at: those the main store lists and those found in the staging store. */
  sessions: number;
  /** Re-sealed by this run, in id order. */
  resealed: string[];
  /** Of {@link RekeyReport.resealed}: the ones an interrupted run had left in the staging store. */
  resumed: string[];
  /** Already wholly under the current key. */
  alreadyCurrent: string[];
  /** Changed while being re-sealed; still under their old key; the next run retries them. */
  changed: string[];
  /** Sessions that could not be re-sealed (a record that does not open, a store failure). */
  failed: RekeyFailure[];
  /** Sessions the main store's list could not describe (not re-sealed). */
  problems: RekeyFailure[];
  /** Sessions still in the staging store after the run (empty after a complete run). */
  stagingLeft: string[];
  /**
   * How many of the sessions looked at use each key id, as last read (a session sealed under two
   * keys counts for both). Sessions that could not be read are not counted: see `complete`.
   */
  keysInUse: Record<string, number>;
  /**
   * Keyring ids no session uses any more: they can be retired. Only filled when the run is
   * `complete`; empty otherwise, since a session not read may still need any key.
   */
  retirable: string[];
  /**
   * True when every session is wholly under the current key: nothing changed, failed or left in
   * staging, and no list problem.
   */
  complete: boolean;
}

/** How many times one session is looked at again after a step changed what its copies hold. */
const MAX_ROUNDS = 4;

interface Run {
  store: SessionStore;
  staging: SessionStore;
  keyring: Keyring;
  onStep: (id: string, step: RekeyStep) => Promise<void>;
}

interface SessionResult {
  outcome: RekeyOutcome;
  resumed: boolean;
  /** Keys the session uses after this run, when known. */
  keys?: Set<string>;
  failure?: RekeyFailure;
}

function failureOf(id: string, error: unknown): RekeyFailure {
  if (isTidemarkError(error)) return { id, code: error.code, message: error.message };
  return { id, code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) };
}

/** Every id a store lists, and the sessions it could not describe. */
async function listIds(store: SessionStore): Promise<{ ids: string[]; problems: RekeyFailure[] }> {
  const ids: string[] = [];
  const problems = new Map<string, RekeyFailure>();
  for await (const entry of listAll(store)) {
    if ('summary' in entry) ids.push(entry.summary.id);
    else problems.set(entry.problem.id, failureOf(entry.problem.id, entry.problem.error));
  }
  return { ids, problems: [...problems.values()] };
}

/** The session without the version field, as written. */
function image(stored: StoredImage): SessionImage {
  const { updatedAt: _, ...rest } = stored;
  return rest;
}

/**
 * Reads session `id` back from `store` after a write and checks it: present, its plaintext equal
 * to `digest` (sha256 over header, summary fields and every event), and sealed under exactly the
 * keys of what was written.
 * @throws TidemarkError CORRUPT when it differs.
 */
async function verifyWritten(
  run: Run,
  store: SessionStore,
  written: SessionImage,
  digest: string,
  where: string,
): Promise<void> {
  const id = written.id;
  const back = await loadStored(store, id);
  if (back === undefined)
    throw new TidemarkError(
      'CORRUPT',
      `rekey: session ${id} is missing from the ${where} store right after it was written`,
      {
        sessionId: id,
      },
    );
  const wanted = keyUse(written);
  const found = keyUse(back);
  const sameKeys =
    found.plaintext === wanted.plaintext && [...found.keys].sort().join() === [...wanted.keys].sort().join();
  if (!sameKeys || imageDigest(openImage(run.keyring, back)) !== digest) {
    throw new TidemarkError(
      'CORRUPT',
      `rekey: session ${id} read back from the ${where} store differs from what was written`,
      {
        sessionId: id,
      },
    );
  }
}

/** Steps 3 to 5: replace the main store's version `updatedAt` of the session by the staged copy. */
async function replaceFromStaging(
  run: Run,
  staged: SessionImage,
  digest: string,
  updatedAt: string,
): Promise<'replaced' | 'changed'> {
  const id = staged.id;
  await run.onStep(id, 'delete');
  try {
    await run.store.delete(id, { ifUpdatedAt: updatedAt });
  } catch (error) {
    if (!(isTidemarkError(error) && error.code === 'CONFLICT')) throw error;
    // Changed since it was loaded: the main store's version is the truth, the copy is stale.
    await run.onStep(id, 'unstage');
    await run.staging.delete(id);
    return 'changed';
  }
  await restore(run, staged, digest);
  return 'replaced';
}

/** Steps 4 and 5: write the staged copy into the main store, verify it, delete the copy. */
async function restore(run: Run, staged: SessionImage, digest: string): Promise<void> {
  await run.onStep(staged.id, 'restore');
  await materialize(run.store, staged);
  await verifyWritten(run, run.store, staged, digest, 'main');
  await run.onStep(staged.id, 'unstage');
  await run.staging.delete(staged.id);
}

/**
 * One session, from whatever state an earlier run left it in:
 * - only in staging (a run stopped between steps 3 and 4): put it back (4, 5);
 * - in both, the same content: main wholly current → 5 (stopped between 4 and 5); else, the staged
 *   copy current → 3, 4, 5 (stopped between 2 and 3); else (the current key changed since) drop it;
 * - in both, different: when the staged events are a prefix of the main store's (the session moved
 *   on since it was staged) the copy is stale and dropped; otherwise both are kept and the session
 *   fails, since neither copy may be thrown away;
 * - only in main: current → nothing; else steps 1 to 5.
 */
async function rekeyOne(run: Run, id: string, staged: Set<string>): Promise<SessionResult> {
  const current = run.keyring.currentId;
  let resumed = false;
  let lastKeys: Set<string> | undefined;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const main = await loadStored(run.store, id);
    const copy = staged.has(id) ? await loadStored(run.staging, id) : undefined;
    if (copy === undefined) staged.delete(id);
    if (main !== undefined) lastKeys = keyUse(main).keys;
    if (main === undefined && copy === undefined) return { outcome: 'changed', resumed };
    if (main === undefined && copy !== undefined) {
      // The only copy: it is put back whatever key it is under (the next round re-seals it).
      const digest = imageDigest(openImage(run.keyring, copy));
      await restore(run, image(copy), digest);
      staged.delete(id);
      resumed = true;
      continue;
    }
    if (main === undefined) continue;
    if (copy !== undefined) {
      let copyPlain: SessionImage | undefined;
      try {
        copyPlain = openImage(run.keyring, copy);
      } catch {
        // A copy that does not open (its key left the keyring): main holds the session; drop it.
      }
      const mainPlain = openImage(run.keyring, main);
      const digest = imageDigest(mainPlain);
      if (copyPlain !== undefined && imageDigest(copyPlain) === digest) {
        if (wholly(main, current)) {
          await run.onStep(id, 'unstage');
          await run.staging.delete(id);
          staged.delete(id);
          return { outcome: 'resealed', resumed: true, keys: new Set([current]) };
        }
        if (wholly(copy, current)) {
          const done = await replaceFromStaging(run, image(copy), digest, main.updatedAt);
          staged.delete(id);
          if (done === 'changed') return { outcome: 'changed', resumed: true, keys: keyUse(main).keys };
          return { outcome: 'resealed', resumed: true, keys: new Set([current]) };
        }
      } else if (copyPlain !== undefined && !eventsArePrefix(copyPlain, mainPlain)) {
        return {
          outcome: 'failed',
          resumed,
          keys: keyUse(main).keys,
          failure: {
            id,
            code: 'CONFLICT',
            message: `rekey: session ${id} is in the main and the staging store with different events, and the staged copy is not an older version of the main one; both are kept: compare them and delete the wrong one`,
          },
        };
      }
      // A stale copy (the session moved on, or it is under an old key): main is the truth.
      await run.onStep(id, 'unstage');
      await run.staging.delete(id);
      staged.delete(id);
      continue;
    }
    if (wholly(main, current))
      return { outcome: resumed ? 'resealed' : 'current', resumed, keys: new Set([current]) };
    // Steps 1 to 5.
    const plain = openImage(run.keyring, main);
    const digest = imageDigest(plain);
    const sealed = sealImage(run.keyring, plain, sealedRuns(id, main.events));
    await run.onStep(id, 'stage');
    staged.add(id);
    await materialize(run.staging, sealed);
    await verifyWritten(run, run.staging, sealed, digest, 'staging');
    const done = await replaceFromStaging(run, sealed, digest, main.updatedAt);
    staged.delete(id);
    if (done === 'changed') return { outcome: 'changed', resumed, keys: keyUse(main).keys };
    return { outcome: 'resealed', resumed, keys: new Set([current]) };
  }
  return { outcome: 'changed', resumed, ...(lastKeys !== undefined && { keys: lastKeys }) };
}

/**
 * Re-seals every session of `store` under `keyring.currentId`, one at a time in id order, each
 * all or nothing (see the steps at the top of this module), and finishes first whatever an
 * interrupted earlier run left in `staging`. Run it again after a crash, a kill or a report with
 * `changed` sessions; a run that ends `complete` lists the keys that can be retired.
 *
 * Run one rekey at a time per store, and preferably while no agent writes to the store: a session
 * is briefly absent from the main store between its steps 3 and 4, and a session changed while it
 * is re-sealed is left as it is (`changed`) for the next run.
 *
 * @throws TidemarkError when the main or the staging store cannot be listed; every failure of one
 *   session is reported in `failed` and the run goes on.
 */
export async function rekeyStore(options: RekeyOptions): Promise<RekeyReport> {
  const { store, staging, keyring } = options;
  const onStep = options.onStep;
  const run: Run = {
    store,
    staging,
    keyring,
    onStep: async (id, step) => {
      await onStep?.(id, step);
    },
  };
  const main = await listIds(store);
  const inStaging = await listIds(staging);
  // A staging copy the staging store cannot describe may be the only copy of a session: never
  // skipped silently, and it makes the run incomplete.
  const problems = [
    ...main.problems,
    ...inStaging.problems.map((p) => ({ ...p, message: `staging: ${p.message}` })),
  ];
  const staged = new Set(inStaging.ids);
  const ids = [...new Set([...main.ids, ...inStaging.ids])].sort();
  const report: RekeyReport = {
    currentKeyId: keyring.currentId,
    sessions: ids.length,
    resealed: [],
    resumed: [],
    alreadyCurrent: [],
    changed: [],
    failed: [],
    problems,
    stagingLeft: [],
    keysInUse: {},
    retirable: [],
    complete: false,
  };
  options.onProgress?.({ done: 0, total: ids.length });
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    let result: SessionResult;
    try {
      result = await rekeyOne(run, id, staged);
    } catch (error) {
      result = { outcome: 'failed', resumed: false, failure: failureOf(id, error) };
    }
    if (result.outcome === 'resealed') report.resealed.push(id);
    if (result.outcome === 'resealed' && result.resumed) report.resumed.push(id);
    if (result.outcome === 'current') report.alreadyCurrent.push(id);
    if (result.outcome === 'changed') report.changed.push(id);
    if (result.failure !== undefined) report.failed.push(result.failure);
    for (const key of result.keys ?? []) report.keysInUse[key] = (report.keysInUse[key] ?? 0) + 1;
    options.onProgress?.({
      done: i + 1,
      total: ids.length,
      id,
      outcome: result.outcome,
      resumed: result.resumed,
    });
  }
  report.stagingLeft = (await listIds(staging)).ids.sort();
  report.complete =
    report.changed.length === 0 &&
    report.failed.length === 0 &&
    report.problems.length === 0 &&
    report.stagingLeft.length === 0;
  if (report.complete)
    report.retirable = keyring.ids().filter((k) => k !== keyring.currentId && !(k in report.keysInUse));
  return report;
}
