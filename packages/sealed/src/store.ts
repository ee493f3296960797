// `sealStore(inner, options)`: a SessionStore that seals on the way in and opens on the way out,
// over any SessionStore. The inner store keeps every rule of the contract (atomic, durable,
// idempotent, one writer); this layer only transforms event data and summary fields.
import {
  type AppendOptions,
  type AppendResult,
  assertStoredAfter,
  assertValidId,
  type CreateInit,
  checksAppendAfter,
  DEFAULT_MAX_EVENT_BYTES,
  type DeleteOptions,
  type EventLimits,
  errors,
  generateId,
  type ListQuery,
  type LoadedSession,
  type LoadOptions,
  type PreparedEvent,
  prepareBatch,
  promptOf,
  type ReadRange,
  type RepairOptions,
  type RepairReport,
  type SessionEvent,
  type SessionMeta,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type StoreCapabilities,
  type SummaryPatch,
  sameEvent,
  TidemarkError,
  type VerifyReport,
  validateAppendOptions,
  validateCreate,
  validatePatch,
} from '@tidemark/core';
import { SealedEventOpener, sealPreparedBatch } from './batch.js';
import { noKeys } from './errors.js';
import {
  checkSealedEvent,
  openSummary,
  sealAttrs,
  sealPrepared,
  sealSummaryFields,
  sealText,
} from './format.js';
import { type Keyring, toKeyring } from './keyring.js';
import { LastRecords, openedPairs, openStoredRecord, type StoredAndOpened } from './reads.js';
import { mergeCounts, type Redactor } from './redact/index.js';
import {
  anyCounted,
  type RedactionCounts,
  redactEvents,
  redactPatch,
  storedCounts,
  toRedactor,
  withCounts,
} from './redaction.js';
import type { SealedAppendResult, SealedStore, SealedStoreOptions } from './sealed-store.js';
import { verifySealed } from './verify.js';

export {
  type SealedAppendResult,
  type SealedStore,
  type SealedStoreOptions,
  sealedEventBytes,
} from './sealed-store.js';

interface Maintained {
  verify?(target?: { id?: string }): Promise<VerifyReport>;
  repair?(id: string, options?: RepairOptions): Promise<RepairReport>;
}

/** A session created here and not yet appended: whether its pending patch has a firstPrompt (the caller's or derived). */
type PromptState = 'pending' | 'pending-derived' | 'pending-set';

/**
 * `options.after` of an append, in the forms the sealed store compares: as the caller gave it, and
 * as this store would have stored it (redacted, when redaction is on and changed something).
 */
interface AfterForms {
  /** The caller's `after`, validated (what {@link assertStoredAfter} names in a CONFLICT). */
  given: PreparedEvent;
  /** The redacted plaintext when redaction changed it, else undefined. */
  redacted: SessionEvent | undefined;
  /** The form handed to the inner store: the stored form's plaintext sealed under the current key. */
  sealed: SessionEvent;
}

function isConflict(error: unknown): boolean {
  return error instanceof TidemarkError && error.code === 'CONFLICT';
}

/** True when an opened stored event is `after` in either form the store accepts. */
function isAfter(opened: SessionEvent, after: AfterForms): boolean {
  return (
    sameEvent(opened, after.given.event) ||
    (after.redacted !== undefined && sameEvent(opened, after.redacted))
  );
}

class SealedSessionStore implements SealedStore {
  readonly inner: SessionStore;
  readonly keyring: Keyring | undefined;
  readonly #limits: EventLimits;
  readonly #redactor: Redactor | undefined;
  readonly #prompts = new Map<string, PromptState>();
  /**
   * Per session, the last record this instance appended or read, as stored: a hint for `after`
   * (the last record of a batch sealed as one is a member, whose stored form does not follow from
   * the event alone). Never trusted: the inner store checks `after` as handed over.
   */
  readonly #lastStored = new LastRecords();
  /** Fixed at construction: a store's capabilities do not change over its life (core's are readonly fields). */
  readonly capabilities: StoreCapabilities;
  #closed = false;

  constructor(
    inner: SessionStore,
    keyring: Keyring | undefined,
    limits: EventLimits,
    redactor: Redactor | undefined,
  ) {
    this.inner = inner;
    this.#redactor = redactor;
    this.keyring = keyring;
    this.#limits = limits;
    this.capabilities = { appendAfter: checksAppendAfter(inner) };
  }

  #assertOpen(): void {
    if (this.#closed) throw errors.closed();
  }

  #keys(what: string, id?: string): Keyring {
    if (this.keyring === undefined) throw noKeys(what, id);
    return this.keyring;
  }

  async create(init?: CreateInit): Promise<SessionMeta> {
    this.#assertOpen();
    const valid = validateCreate(init, generateId);
    const id = valid.meta.id;
    const given: CreateInit = { ...(init as CreateInit), id };
    let counts: RedactionCounts = {};
    if (valid.patch.title !== undefined) {
      const keyring = this.#keys('create', id);
      let title = valid.patch.title;
      if (this.#redactor !== undefined) {
        const result = this.#redactor.redactText(title);
        title = result.text;
        counts = result.counts;
      }
      given.title = sealText(keyring, id, 'title', title, 'create');
    }
    const meta = await this.inner.create(given);
    this.#prompts.set(id, 'pending');
    if (anyCounted(counts)) await this.#addRedactions(id, this.#keys('create', id), counts);
    return meta;
  }

  async append(
    id: string,
    events: readonly SessionEvent[],
    options?: AppendOptions,
  ): Promise<SealedAppendResult> {
    this.#assertOpen();
    assertValidId(id);
    const prepared = prepareBatch(events, this.#limits, id);
    // INVALID as core's (not an object, after not an event or not right before the batch), before
    // anything is written: the derived firstPrompt below is written before the append.
    const given = validateAppendOptions(options, prepared, this.#limits);
    const keyring = this.#keys('append', id);
    let plain = prepared.map((p) => p.event);
    let counts: RedactionCounts = {};
    if (this.#redactor !== undefined) ({ events: plain, counts } = redactEvents(plain, this.#redactor));
    const sealed = sealPreparedBatch(
      keyring,
      id,
      prepared,
      plain,
      this.#limits.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES,
    );
    const after = given === undefined ? undefined : this.#afterForms(keyring, id, given);
    let prompt: string | undefined;
    for (const event of plain) {
      prompt = promptOf(event);
      if (prompt !== undefined) break;
    }
    const state = this.#prompts.get(id);
    let derived = false;
    if (
      prompt !== undefined &&
      (state === 'pending' || state === 'pending-derived') &&
      plain[0]!.seq === 0 &&
      !(await this.inner.has(id))
    ) {
      // Lands with the first batch: the inner store keeps a pending session's patch. Only while the
      // session is not stored (another instance may have written its first batch: then this
      // append is a retry or a CONFLICT, and must change nothing). Should the append fail, the
      // next first batch sets its own prompt over this one ('pending-derived').
      await this.inner.update(id, { firstPrompt: sealText(keyring, id, 'firstPrompt', prompt, 'append') });
      this.#prompts.set(id, 'pending-derived');
      derived = true;
    }
    let result: AppendResult;
    try {
      result = await this.#appendSealed(keyring, id, sealed, after);
    } catch (error) {
      const retry = await this.#sameAsStored(id, plain, error, after);
      if (retry === undefined) throw error;
      return retry;
    }
    if (state !== undefined) this.#prompts.delete(id); // materialized now
    this.#lastStored.remember(id, sealed[sealed.length - 1]!, plain[plain.length - 1]!);
    try {
      if (prompt !== undefined && !derived) {
        // Not derived with this batch: whether the session has a firstPrompt is the store's to say
        // (another instance may have written, deleted or re-created it), so no cache: an empty
        // update returns the stored summary. Only batches with a prompt-bearing event pay for it.
        const stored = await this.inner.update(id, {});
        if (stored.firstPrompt === undefined) {
          await this.inner.update(id, {
            firstPrompt: sealText(keyring, id, 'firstPrompt', prompt, 'append'),
          });
        }
      }
      if (!anyCounted(counts)) return result;
      await this.#addRedactions(id, keyring, counts);
    } catch (error) {
      // The batch is stored: the append succeeded, and saying otherwise would report stored events
      // as not written (the fault harness calls that a violation: visible, never acknowledged). A
      // fault here costs only display fields, which a later batch sets again: firstPrompt stays
      // unset until the next prompt-bearing batch, this batch's redaction counts are not added.
      if (!(error instanceof TidemarkError)) throw error;
    }
    return anyCounted(counts) ? { ...result, redactions: counts } : result;
  }

  /**
   * `after` as the store would have stored it: redacted when redaction is on (idempotent, so the
   * redacted form a caller read back stays as it is), sealed under the current key. Sealing is
   * deterministic, so this is byte for byte the stored record whenever that record was sealed
   * under the current key from the same plaintext with its keys in the same order.
   */
  #afterForms(keyring: Keyring, id: string, given: PreparedEvent): AfterForms {
    let stored = given.event;
    if (this.#redactor !== undefined)
      [stored] = redactEvents([stored], this.#redactor).events as [SessionEvent];
    return {
      given,
      redacted: stored === given.event ? undefined : stored,
      sealed: sealPrepared(keyring, id, given, stored),
    };
  }

  /**
   * The inner append, with `after` sealed. When the inner store answers CONFLICT, the stored event
   * at `after.seq` may still be `after` in other bytes: sealed under another key (written before a
   * rotation, or re-sealed by rekey under another current key), from data with its keys in another
   * order, or stored unredacted (by a store without redaction) while this one redacts. Then the
   * stored record is opened and compared with both forms of `after` ({@link isAfter}); when it is
   * `after`, the append is retried once with that very record as `after`, so the inner store still
   * checks atomically that nothing changed since. Not `after` (or absent): core's CONFLICT, naming
   * session and seq. A record that does not open: the CORRUPT a read gives (never a write over it).
   */
  async #appendSealed(
    keyring: Keyring,
    id: string,
    sealed: readonly SessionEvent[],
    after: AfterForms | undefined,
  ): Promise<AppendResult> {
    if (after === undefined) return this.inner.append(id, sealed);
    const known = this.#lastStored.get(id);
    const hint =
      known !== undefined && known.stored.seq === after.sealed.seq && isAfter(known.opened, after)
        ? known.stored
        : after.sealed;
    try {
      return await this.inner.append(id, sealed, { after: hint });
    } catch (error) {
      if (!isConflict(error)) throw error;
      const stored = await this.#storedAt(id, after.sealed.seq);
      if (stored !== undefined && sameEvent(stored, hint)) {
        // The inner store found `after` as sent: the CONFLICT is the batch's (another writer
        // appended past it, or a retry whose data has its keys in another order: #sameAsStored).
        throw error;
      }
      const opened =
        stored === undefined ? undefined : await openStoredRecord(this.inner, keyring, id, stored);
      if (opened === undefined || !isAfter(opened, after)) {
        assertStoredAfter(id, opened, after.given);
      }
      // `stored` is there: assertStoredAfter threw when the session holds no event at after.seq.
      return this.inner.append(id, sealed, { after: stored! });
    }
  }

  /** The inner store's record at `seq`, as stored; undefined when the session holds none (or is not stored). */
  async #storedAt(id: string, seq: number): Promise<SessionEvent | undefined> {
    try {
      for await (const event of this.inner.read(id, { fromSeq: seq, toSeq: seq })) return event;
    } catch (error) {
      if (error instanceof TidemarkError && error.code === 'NOT_FOUND') return undefined;
      throw error;
    }
    return undefined;
  }

  /** Adds `counts` to the session's sealed attrs (an extra read and write, only when something was redacted). */
  async #addRedactions(id: string, keyring: Keyring, counts: RedactionCounts): Promise<SessionSummary> {
    const stored = openSummary(keyring, await this.inner.update(id, {}));
    const attrs = withCounts(stored.attrs ?? {}, mergeCounts(storedCounts(stored.attrs), counts));
    return this.inner.update(id, { attrs: sealAttrs(keyring, id, attrs) });
  }

  /**
   * A CONFLICT for a batch whose events are all stored may still be an idempotent retry: the
   * inner store compares sealed data as JSON, and sealing is deterministic, but data with its keys
   * in another order seals to other bytes. Compares the opened events (and, with `after`, the
   * stored event before the batch: a retry is checked against `after` too, as core checks it); the
   * stored next seq when they are equal, undefined when not (then the CONFLICT stands).
   */
  async #sameAsStored(
    id: string,
    prepared: readonly SessionEvent[],
    error: unknown,
    after: AfterForms | undefined,
  ): Promise<AppendResult | undefined> {
    if (!isConflict(error) || this.keyring === undefined) return undefined;
    const keyring = this.keyring;
    try {
      const fromSeq = (after?.given.event ?? prepared[0]!).seq;
      const toSeq = prepared[prepared.length - 1]!.seq;
      const stored: StoredAndOpened[] = [];
      for await (const pair of openedPairs(this.inner, keyring, id, { fromSeq, toSeq }, this.#lastStored))
        stored.push(pair);
      let before: StoredAndOpened | undefined;
      if (after !== undefined) {
        // The stored event before the batch must be after (sameEvent compares the seq too).
        before = stored.shift();
        if (before === undefined || !isAfter(before.opened, after)) return undefined;
      }
      if (
        stored.length !== prepared.length ||
        !prepared.every((mine, i) => sameEvent(mine, stored[i]!.opened))
      )
        return undefined;
      // The stored records themselves, appended: the inner store's own idempotent retry, which
      // checks again atomically and ends this instance's reservation of the id as any append does.
      return await this.inner.append(
        id,
        stored.map((pair) => pair.stored),
        before === undefined ? undefined : { after: before.stored },
      );
    } catch {
      return undefined;
    }
  }

  async load(id: string, options?: LoadOptions): Promise<LoadedSession> {
    this.#assertOpen();
    const loaded = await this.inner.load(id, options);
    const keyring = this.keyring;
    const events = new Array<SessionEvent>(loaded.events.length);
    if (keyring === undefined) {
      for (let i = 0; i < events.length; i++) events[i] = checkSealedEvent(id, loaded.events[i]!);
    } else {
      // A load starts at seq 0, never inside a batch.
      const opener = new SealedEventOpener(keyring, id);
      for (let i = 0; i < events.length; i++) events[i] = opener.open(loaded.events[i]!);
      if (events.length > 0)
        this.#lastStored.remember(id, loaded.events[events.length - 1]!, events[events.length - 1]!);
    }
    const summary = openSummary(keyring, loaded.summary);
    return { ...loaded, summary, events };
  }

  read(id: string, range?: ReadRange): AsyncIterable<SessionEvent> {
    const self = this;
    return {
      async *[Symbol.asyncIterator]() {
        self.#assertOpen();
        const keyring = self.keyring;
        if (keyring === undefined) {
          for await (const event of self.inner.read(id, range)) yield checkSealedEvent(id, event);
          return;
        }
        for await (const pair of openedPairs(self.inner, keyring, id, range, self.#lastStored))
          yield pair.opened;
      },
    };
  }

  async list(query?: ListQuery): Promise<SessionPage> {
    this.#assertOpen();
    const page = await this.inner.list(query);
    const sessions: SessionSummary[] = [];
    const problems = [...page.problems];
    for (const summary of page.sessions) {
      try {
        sessions.push(openSummary(this.keyring, summary));
      } catch (error) {
        if (!(error instanceof TidemarkError)) throw error;
        problems.push({ id: summary.id, error });
      }
    }
    return { ...page, sessions, problems };
  }

  async has(id: string): Promise<boolean> {
    this.#assertOpen();
    return this.inner.has(id);
  }

  async update(id: string, patch: SummaryPatch): Promise<SessionSummary> {
    this.#assertOpen();
    assertValidId(id);
    let valid = validatePatch(patch);
    const keyring = this.#keys('update', id);
    if (this.#redactor !== undefined) {
      const redacted = redactPatch(valid, this.#redactor);
      valid = redacted.patch;
      if (valid.attrs !== undefined || anyCounted(redacted.counts)) {
        // Keep the stored counts (a caller's attrs replace the whole object) and add this patch's.
        const current = openSummary(keyring, await this.inner.update(id, {}));
        const counts = mergeCounts(storedCounts(current.attrs), redacted.counts);
        valid = { ...valid, attrs: withCounts(valid.attrs ?? current.attrs ?? {}, counts) };
      }
    }
    const sealed = sealSummaryFields(keyring, id, valid);
    const stored = await this.inner.update(id, sealed);
    if (valid.firstPrompt !== undefined && this.#prompts.has(id)) this.#prompts.set(id, 'pending-set');
    return openSummary(this.keyring, stored);
  }

  async delete(id: string, options?: DeleteOptions): Promise<void> {
    this.#assertOpen();
    try {
      await this.inner.delete(id, options);
    } finally {
      this.#prompts.delete(id);
      this.#lastStored.forget(id);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#prompts.clear();
    this.#lastStored.clear();
    await this.inner.close();
  }

  async verify(target?: { id?: string }): Promise<VerifyReport> {
    this.#assertOpen();
    const inner = this.inner as SessionStore & Maintained;
    if (inner.verify === undefined)
      throw errors.invalid('verify: the inner store has no maintenance interface');
    const report = await inner.verify(target);
    return this.keyring === undefined ? report : verifySealed(this.inner, this.keyring, report);
  }

  async repair(id: string, options?: RepairOptions): Promise<RepairReport> {
    this.#assertOpen();
    const inner = this.inner as SessionStore & Maintained;
    if (inner.repair === undefined)
      throw errors.invalid('repair: the inner store has no maintenance interface');
    return inner.repair(id, options);
  }
}

/**
 * Wraps any SessionStore so that each event's `data` and the summary's `title`, `firstPrompt` and
 * `attrs` are sealed (AES-256-GCM, bound to session, seq, type and time) in it. Every adapter takes
 * the result unchanged.
 */
export function sealStore(inner: SessionStore, options: SealedStoreOptions): SealedStore {
  if (typeof options !== 'object' || options === null || !('keys' in options)) {
    throw errors.invalid('sealStore: options must name keys (undefined for a store opened without keys)');
  }
  return new SealedSessionStore(
    inner,
    toKeyring(options.keys),
    options.limits ?? {},
    toRedactor(options.redact),
  );
}
