// SessionStoreBase: the rules it owns for every backend, checked over a tiny in-test storage.
import { describe, expect, it } from 'vitest';
import {
  type AppendResult,
  applyPatch,
  checksAppendAfter,
  deleteConflict,
  emptySummary,
  errors,
  type LoadedSession,
  nowIso,
  type PreparedEvent,
  pageOf,
  type RepairOptions,
  type RepairReport,
  type Reservation,
  type SessionEvent,
  type SessionHealth,
  type SessionPage,
  SessionStoreBase,
  type SessionSummary,
  type StoreOptions,
  type SummaryPatch,
  summaryAfterAppend,
  TidemarkError,
  type ValidListQuery,
} from '../src/index.js';
import { deferred } from './store-wrappers.js';

const T = '2026-01-01T00:00:00.000Z';
const event = (seq: number, type = 'x'): SessionEvent => ({ seq, type, time: T, data: seq });

/** A Map as storage; `fail` makes the next hook named in it throw IO. */
class TinyStore extends SessionStoreBase {
  protected readonly formatVersion = 7;
  readonly stored = new Map<string, { summary: SessionSummary; events: SessionEvent[] }>();
  readonly calls: string[] = [];
  /** The `after` argument of each storageAppend call, in order. */
  readonly afterArgs: Array<PreparedEvent | undefined> = [];
  fail = new Set<string>();
  gate: Promise<void> | undefined;
  closes = 0;

  constructor(options: StoreOptions = {}) {
    super(options, 'openTinyStore');
  }

  private enter(hook: string): void {
    this.calls.push(hook);
    if (this.fail.delete(hook)) throw new TidemarkError('IO', `${hook} failed`);
  }

  protected async storageHas(id: string): Promise<boolean> {
    this.enter('has');
    return this.stored.has(id);
  }
  protected async storageAppend(
    id: string,
    batch: readonly PreparedEvent[],
    reservation: Reservation | undefined,
    after?: PreparedEvent,
  ): Promise<AppendResult> {
    this.enter('append');
    this.afterArgs.push(after);
    if (this.gate !== undefined) await this.gate;
    let session = this.stored.get(id);
    if (session === undefined) {
      if (reservation === undefined) throw errors.notFound(id);
      session = { summary: applyPatch(emptySummary(reservation.meta), reservation.patch, T), events: [] };
      this.stored.set(id, session);
    }
    const events = batch.map((item) => item.event);
    session.events.push(...events);
    session.summary = summaryAfterAppend(session.summary, events, this.settings.isBoundary, nowIso());
    return { nextSeq: session.events.length };
  }
  protected async storageLoad(id: string): Promise<LoadedSession> {
    this.enter('load');
    const session = this.stored.get(id);
    if (session === undefined) throw errors.notFound(id);
    const { summary, events } = session;
    const meta = { id, createdAt: summary.createdAt, formatVersion: this.formatVersion };
    return {
      meta,
      summary,
      events: [...events],
      committedSeq: summary.committedSeq,
      interrupted: summary.interrupted,
    };
  }
  protected async *storageRead(id: string, fromSeq: number, toSeq: number): AsyncIterable<SessionEvent> {
    this.enter('read');
    const session = this.stored.get(id);
    if (session === undefined) throw errors.notFound(id);
    yield* session.events.slice(fromSeq, toSeq + 1);
  }
  protected async storageList(query: ValidListQuery): Promise<SessionPage> {
    this.enter('list');
    return pageOf(
      [...this.stored.values()].map((s) => s.summary),
      query,
      [...this.fail]
        .filter((f) => f.startsWith('problem:'))
        .map((f) => ({ id: f.slice(8), error: errors.corrupt('x', {}) })),
    );
  }
  protected async storageUpdate(id: string, patch: SummaryPatch): Promise<SessionSummary | undefined> {
    this.enter('update');
    const session = this.stored.get(id);
    if (session === undefined) return undefined;
    session.summary = applyPatch(session.summary, patch, nowIso());
    return session.summary;
  }
  protected async storageDelete(id: string, ifUpdatedAt: string | undefined): Promise<'deleted' | 'absent'> {
    this.enter('delete');
    const session = this.stored.get(id);
    if (session === undefined) return 'absent';
    if (ifUpdatedAt !== undefined && ifUpdatedAt !== session.summary.updatedAt)
      throw deleteConflict(id, ifUpdatedAt, session.summary.updatedAt);
    this.stored.delete(id);
    return 'deleted';
  }
  protected async storageClose(): Promise<void> {
    this.closes += 1;
  }
  protected async storageVerify(id: string): Promise<SessionHealth> {
    this.enter(`verify:${id}`);
    const session = this.stored.get(id);
    if (session === undefined) throw errors.notFound(id);
    return { sessionId: id, status: 'ok', eventCount: session.events.length, problems: [] };
  }
  protected async storageRepair(id: string, options: Required<RepairOptions>): Promise<RepairReport> {
    this.enter(`repair:${options.tail}:${options.dropCorrupt}`);
    return {
      sessionId: id,
      eventCount: this.stored.get(id)?.events.length ?? 0,
      removed: [],
      quarantined: [],
    };
  }
}

/** A TinyStore whose storageAppend says it checks `after` itself (it only records it here). */
class NativeAfterStore extends TinyStore {
  protected override readonly storageChecksAfter = true;
}

/** A TinyStore that also reads by pages, as the base prefers when a backend has them. */
class PagedTinyStore extends TinyStore {
  protected override async *storageReadPages(
    id: string,
    fromSeq: number,
    toSeq: number,
  ): AsyncIterable<SessionEvent[]> {
    this.calls.push('readPages');
    const session = this.stored.get(id);
    if (session === undefined) throw errors.notFound(id);
    yield session.events.slice(fromSeq, toSeq + 1);
  }
}

const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (error: unknown) => (error as TidemarkError).code,
  );

describe('SessionStoreBase construction', () => {
  it('validates the shared options, naming the factory', () => {
    expect(() => new TinyStore({ durability: 'x' as never })).toThrow(/openTinyStore: durability/);
  });
});

describe('SessionStoreBase create and the reservation rules', () => {
  it('create reserves without storing and stamps the format version', async () => {
    const store = new TinyStore();
    expect(await store.create({ id: 's', createdAt: T })).toEqual({
      id: 's',
      createdAt: T,
      formatVersion: 7,
    });
    expect(await store.has('s')).toBe(false);
    expect(await code(store.create({ id: 's' }))).toBe('ALREADY_EXISTS');
  });

  it('create of a stored id is ALREADY_EXISTS; a failing storage check surfaces as it is', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    await store.append('s', [event(0)]);
    expect(await code(store.create({ id: 's' }))).toBe('ALREADY_EXISTS');
    store.fail.add('has');
    expect(await code(store.create({ id: 'other' }))).toBe('IO');
  });

  it('the first batch materializes the reservation; append of an unknown id is NOT_FOUND', async () => {
    const store = new TinyStore();
    expect(await code(store.append('nope', [event(0)]))).toBe('NOT_FOUND');
    await store.create({ id: 's', title: 'hello' });
    expect(await store.append('s', [event(0), event(1, 'turn/end')])).toEqual({ nextSeq: 2 });
    expect((await store.load('s')).summary).toMatchObject({ title: 'hello', eventCount: 2, committedSeq: 1 });
    // The reservation ended: the session is stored now, a second create is refused by storage.
    expect(await code(store.create({ id: 's' }))).toBe('ALREADY_EXISTS');
  });

  // Guards that a failed first append keeps the reservation, so the caller can retry.
  it('a failed append keeps the reservation', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    store.fail.add('append');
    expect(await code(store.append('s', [event(0)]))).toBe('IO');
    expect(await store.append('s', [event(0)])).toEqual({ nextSeq: 1 });
  });

  it('an invalid batch is refused before storage is touched', async () => {
    const store = new TinyStore({ maxEventBytes: 64 });
    await store.create({ id: 's' });
    const calls = store.calls.length;
    expect(await code(store.append('s', [{ ...event(0), data: 'y'.repeat(100) }]))).toBe('INVALID');
    expect(await code(store.append('bad id', [event(0)]))).toBe('INVALID');
    expect(store.calls.length).toBe(calls);
  });

  it('update of a pending session merges into the reservation; of an unknown one is NOT_FOUND', async () => {
    const store = new TinyStore();
    await store.create({ id: 's', createdAt: T, title: 'a' });
    expect(await store.update('s', { tags: ['t'] })).toMatchObject({ title: 'a', tags: ['t'], updatedAt: T });
    await store.append('s', [event(0)]);
    expect((await store.load('s')).summary).toMatchObject({ title: 'a', tags: ['t'] });
    expect(await code(store.update('nope', { title: 'x' }))).toBe('NOT_FOUND');
  });

  it('delete discards a pending session; an absent one is NOT_FOUND', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    await store.delete('s');
    expect(await code(store.append('s', [event(0)]))).toBe('NOT_FOUND');
    expect(await code(store.delete('s'))).toBe('NOT_FOUND');
  });

  // Guards that a refused delete (CONFLICT) neither removes the session nor ends a reservation.
  it('a refused delete keeps the session', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    await store.append('s', [event(0)]);
    expect(await code(store.delete('s', { ifUpdatedAt: '2000-01-01T00:00:00.000Z' }))).toBe('CONFLICT');
    expect(await store.has('s')).toBe(true);
    store.fail.add('delete');
    expect(await code(store.delete('s'))).toBe('IO');
    expect(await store.has('s')).toBe(true);
  });
});

describe('SessionStoreBase serialization and close', () => {
  it('operations on one session run one after another', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    const gate = deferred();
    store.gate = gate.promise;
    const append = store.append('s', [event(0)]);
    const load = store.load('s');
    await new Promise((resolve) => setTimeout(resolve, 1));
    expect(store.calls.filter((c) => c === 'load')).toEqual([]);
    gate.resolve();
    await append;
    expect((await load).events).toHaveLength(1);
  });

  it('close waits for running work, then closes storage once; later calls are CLOSED', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    const gate = deferred();
    store.gate = gate.promise;
    const append = store.append('s', [event(0)]);
    await new Promise((resolve) => setTimeout(resolve, 1));
    const closed = store.close();
    expect(store.closes).toBe(0);
    gate.resolve();
    await closed;
    await store.close();
    expect(store.closes).toBe(1);
    expect(await append).toEqual({ nextSeq: 1 });
    for (const call of [store.has('s'), store.list(), store.create(), store.verify(), store.repair('s')])
      expect(await code(call)).toBe('CLOSED');
  });

  // Guards that work queued behind a running operation when close() starts is refused, not run.
  it('an operation queued behind close is CLOSED', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    const gate = deferred();
    store.gate = gate.promise;
    const first = store.append('s', [event(0)]);
    const queued = store.load('s');
    await new Promise((resolve) => setTimeout(resolve, 1));
    const closed = store.close();
    gate.resolve();
    await Promise.all([first, closed]);
    expect(await code(queued)).toBe('CLOSED');
  });

  it('read validates lazily and stops with CLOSED once the store closes', async () => {
    const store = new TinyStore();
    const bad = store.read('bad id');
    expect(store.calls).toEqual([]);
    await expect(bad[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: 'INVALID' });
    await store.create({ id: 's' });
    await store.append('s', [event(0), event(1), event(2)]);
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const e of store.read('s', { fromSeq: 1 })) {
          seen.push(e.seq);
          await store.close();
        }
      })(),
    ).rejects.toMatchObject({ code: 'CLOSED' });
    expect(seen).toEqual([1]);
  });
});

describe('SessionStoreBase verify and repair', () => {
  it('verify of one id rejects when it cannot be checked', async () => {
    const store = new TinyStore();
    expect(await code(store.verify({ id: 'nope' }))).toBe('NOT_FOUND');
  });

  it('verify of all checks every listed id and problem once, recording failures as problems', async () => {
    const store = new TinyStore();
    for (const id of ['a', 'b']) {
      await store.create({ id });
      await store.append(id, [event(0)]);
    }
    store.fail.add('problem:c');
    store.fail.add('verify:b');
    const report = await store.verify();
    expect(report.checked).toBe(3);
    expect(report.sessions.map((s) => [s.sessionId, s.status])).toEqual([
      ['a', 'ok'],
      ['b', 'unreadable'],
      ['c', 'unreadable'],
    ]);
    expect(report.problems.map((p) => [p.sessionId, p.kind])).toEqual([
      ['b', 'unreadable'],
      ['c', 'unreadable'],
    ]);
    expect(report.problems[0]!.message).toContain('IO');
  });

  it('repair fills in default options and validates them', async () => {
    const store = new TinyStore();
    await store.repair('s');
    await store.repair('s', { tail: 'cut', dropCorrupt: true });
    expect(store.calls).toEqual(['repair:keep:false', 'repair:cut:true']);
    expect(await code(store.repair('s', { tail: 'all' as never }))).toBe('INVALID');
    expect(await code(store.repair('s', { dropCorrupt: 1 as never }))).toBe('INVALID');
  });
});

describe('SessionStoreBase append after, checked by the base for a backend that does not', () => {
  it('honours after without claiming it: its check is a read, exact within one instance only', () => {
    // Callers that drop their own confirming reads on a store that claims the capability need the
    // check to hold across instances, as only a backend that checks it in its write (storageChecksAfter) does.
    const store = new TinyStore();
    expect(store.capabilities).toEqual({ appendAfter: false });
    expect(checksAppendAfter(store)).toBe(false);
    const native = new NativeAfterStore();
    expect(native.capabilities).toEqual({ appendAfter: true });
    expect(checksAppendAfter(native)).toBe(true);
  });

  it('after equal to the stored event: read first, then written; storageAppend does not get after', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    await store.append('s', [event(0), event(1)]);
    store.calls.length = 0;
    expect(await store.append('s', [event(2)], { after: event(1) })).toEqual({ nextSeq: 3 });
    expect(store.calls).toEqual(['read', 'append']);
    expect(store.afterArgs).toEqual([undefined, undefined]);
    expect(store.stored.get('s')?.events).toEqual([event(0), event(1), event(2)]);
  });

  it('after different from the stored event is CONFLICT; storageAppend is not called and the session is writable', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    await store.append('s', [event(0), event(1)]);
    store.calls.length = 0;
    for (const after of [
      event(1, 'other'),
      { ...event(1), data: 'rewritten' },
      { ...event(1), time: nowIso() },
    ]) {
      const error = await store.append('s', [event(2)], { after }).catch((e: unknown) => e as TidemarkError);
      expect(error).toMatchObject({ code: 'CONFLICT', sessionId: 's', location: { seq: 1 } });
    }
    expect(store.calls).not.toContain('append');
    expect(store.stored.get('s')?.events).toEqual([event(0), event(1)]);
    expect(await store.append('s', [event(2)], { after: event(1) })).toEqual({ nextSeq: 3 });
  });

  it('after beyond the stored end is CONFLICT, nothing written', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    await store.append('s', [event(0), event(1)]);
    store.calls.length = 0;
    await expect(store.append('s', [event(5)], { after: event(4) })).rejects.toMatchObject({
      code: 'CONFLICT',
      location: { seq: 4 },
    });
    expect(store.calls).toEqual(['read']);
    expect(store.stored.get('s')?.events).toHaveLength(2);
  });

  it('after on a pending session is CONFLICT and keeps the reservation', async () => {
    const store = new TinyStore();
    await store.create({ id: 's', title: 'kept' });
    await expect(store.append('s', [event(1)], { after: event(0) })).rejects.toMatchObject({
      code: 'CONFLICT',
      sessionId: 's',
    });
    expect(store.calls).not.toContain('append');
    expect(await store.has('s')).toBe(false);
    expect(await store.append('s', [event(0)])).toEqual({ nextSeq: 1 });
    expect((await store.load('s')).summary.title).toBe('kept');
  });

  it('after on an id neither created nor stored is NOT_FOUND, as without after', async () => {
    const store = new TinyStore();
    await expect(store.append('nope', [event(1)], { after: event(0) })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(store.calls).not.toContain('append');
  });

  it('a failing read in the check surfaces as it is, and nothing is written', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    await store.append('s', [event(0)]);
    store.fail.add('read');
    await expect(store.append('s', [event(1)], { after: event(0) })).rejects.toMatchObject({ code: 'IO' });
    expect(store.stored.get('s')?.events).toEqual([event(0)]);
  });

  it('reads by pages when the backend has them', async () => {
    const store = new PagedTinyStore();
    await store.create({ id: 's' });
    await store.append('s', [event(0), event(1)]);
    store.calls.length = 0;
    expect(await store.append('s', [event(2)], { after: event(1) })).toEqual({ nextSeq: 3 });
    await expect(store.append('s', [event(3)], { after: event(2, 'other') })).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    expect(store.calls).toEqual(['readPages', 'append', 'readPages']);
  });

  it('invalid options are INVALID before storage is touched', async () => {
    const store = new TinyStore();
    await store.create({ id: 's' });
    await store.append('s', [event(0), event(1)]);
    store.calls.length = 0;
    for (const options of [null, 'x', { after: 'event' }, { after: event(0) }, { after: event(2) }]) {
      await expect(store.append('s', [event(2)], options as never)).rejects.toMatchObject({
        code: 'INVALID',
      });
    }
    await expect(store.append('s', [event(0)], { after: event(0) })).rejects.toMatchObject({
      code: 'INVALID',
    });
    expect(store.calls).toEqual([]);
  });
});

describe('SessionStoreBase append after, for a backend that checks it in its write', () => {
  it('passes after prepared as the fourth argument of storageAppend and reads nothing itself', async () => {
    const store = new NativeAfterStore();
    await store.create({ id: 's' });
    await store.append('s', [event(0)]);
    store.calls.length = 0;
    const after = event(0);
    expect(await store.append('s', [event(1)], { after })).toEqual({ nextSeq: 2 });
    expect(store.calls).toEqual(['append']);
    expect(store.afterArgs).toHaveLength(2);
    expect(store.afterArgs[0]).toBeUndefined();
    expect(store.afterArgs[1]?.event).toEqual(after);
    expect(store.afterArgs[1]?.event).not.toBe(after);
  });

  it('leaves the check to the backend: a wrong after reaches storageAppend unchecked', async () => {
    // This tiny backend ignores after (a real one calls assertStoredAfter): the base must not read.
    const store = new NativeAfterStore();
    await store.create({ id: 's' });
    await store.append('s', [event(0)]);
    expect(await store.append('s', [event(1)], { after: event(0, 'other') })).toEqual({ nextSeq: 2 });
    expect(store.calls).not.toContain('read');
    expect(store.afterArgs[1]?.event).toEqual(event(0, 'other'));
  });

  it('still validates the options first', async () => {
    const store = new NativeAfterStore();
    await store.create({ id: 's' });
    await store.append('s', [event(0)]);
    store.calls.length = 0;
    await expect(store.append('s', [event(1)], { after: event(5) })).rejects.toMatchObject({
      code: 'INVALID',
    });
    expect(store.calls).toEqual([]);
  });
});
