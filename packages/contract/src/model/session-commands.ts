// The commands of the model-based test that make one call of the store API on the active instance.
import {
  type AppendOptions,
  checksAppendAfter,
  type SessionEvent,
  type SessionStore,
  type SessionSummary,
} from '@tidemark/core';
import { violation } from '../harness.js';
import {
  type Cmd,
  compare,
  current,
  type ModelSide,
  makeEvent,
  modelEvents,
  normalizeMeta,
  normalizeSummary,
  type RealSide,
} from './sides.js';

/** Extra `create` fields: lineage, tags, or a malformed field that must be INVALID on both sides. */
export type CreateExtra = { tags?: unknown; parent?: unknown; createdAt?: unknown; colour?: unknown };

export class CreateCommand implements Cmd {
  constructor(
    readonly id: string,
    readonly cwd: string | undefined,
    readonly title: string | undefined,
    readonly extra: CreateExtra = {},
  ) {}
  check = () => true;
  async run(model: ModelSide, real: RealSide) {
    const init = {
      id: this.id,
      ...(this.cwd !== undefined && { cwd: this.cwd }),
      ...(this.title !== undefined && { title: this.title }),
      ...this.extra,
    } as Parameters<SessionStore['create']>[0];
    await compare(
      this.toString(),
      () => current(model).create(init),
      () => current(real).create(init),
      normalizeMeta,
    );
  }
  toString = () =>
    `create(${this.id}, cwd=${this.cwd}, title=${this.title}${Object.keys(this.extra).length > 0 ? `, ${JSON.stringify(this.extra)}` : ''})`;
}

export type AppendKind =
  | 'valid'
  | 'behind'
  | 'ahead'
  | 'retry'
  | 'retry-first'
  | 'conflicting'
  | InvalidBatch;

/** Batches every backend must refuse with INVALID before looking at storage. */
export type InvalidBatch =
  | 'empty'
  | 'gap'
  | 'nan-data'
  | 'bad-time'
  | 'bad-type'
  | 'negative-seq'
  | 'not-array';

/** A malformed batch at the right seq: each must be INVALID whatever the session's state. */
export function invalidBatch(kind: InvalidBatch, next: number, payload: number): unknown {
  const good = makeEvent(next, 0, payload);
  switch (kind) {
    case 'empty':
      return [];
    case 'gap':
      return [good, makeEvent(next + 2, 0, payload)];
    case 'nan-data':
      return [good, { ...makeEvent(next + 1, 0, payload), data: { x: Number.NaN } }];
    case 'bad-time':
      return [{ ...good, time: 'yesterday' }];
    case 'bad-type':
      return [{ ...good, type: 7 }];
    case 'negative-seq':
      return [{ ...good, seq: -1 }];
    case 'not-array':
      return good;
  }
}

/**
 * The `after` an append passes (contract §4.2): `none`; `right`, the event the model stores right
 * before the batch (made up when it stores none there); `stale`, that event with other data, as a
 * writer would hold after another one rewrote the session. Before a batch at seq 0, `right` passes
 * none and `stale` an event at seq 0 (INVALID). The memory model decides what each must answer.
 */
export type AfterKind = 'none' | 'right' | 'stale';

/** The `append` options for `batch` of an {@link AfterKind}, from the model's stored events. */
export function afterOptions(
  kind: AfterKind,
  stored: readonly SessionEvent[],
  batch: unknown,
  payload: number,
): AppendOptions | undefined {
  if (kind === 'none' || !Array.isArray(batch)) return undefined;
  const first = (batch[0] as { seq?: unknown } | undefined)?.seq;
  if (typeof first !== 'number' || !Number.isSafeInteger(first) || first < 0) return undefined;
  const at = first - 1;
  if (at < 0) return kind === 'stale' ? { after: makeEvent(0, 0, payload) } : undefined;
  const found = stored[at];
  if (found === undefined) return { after: makeEvent(at, 0, payload) };
  return { after: kind === 'right' ? found : { ...found, data: { stale: payload } } };
}

export class AppendCommand implements Cmd {
  constructor(
    readonly id: string,
    readonly kind: AppendKind,
    readonly types: number[],
    readonly payload: number,
    readonly after: AfterKind = 'none',
  ) {}
  check = () => true;
  async run(model: ModelSide, real: RealSide) {
    const stored = await modelEvents(model, this.id);
    const next = stored.length;
    let batch: SessionEvent[];
    switch (this.kind) {
      case 'valid':
        batch = this.types.map((t, i) => makeEvent(next + i, t, this.payload));
        break;
      case 'ahead':
        batch = this.types.map((t, i) => makeEvent(next + 1 + i, t, this.payload));
        break;
      case 'behind':
        batch = this.types.map((t, i) => makeEvent(Math.max(0, next - 1) + i, t, this.payload));
        break;
      case 'retry':
        // The last stored events again: an idempotent retry (or a fresh append when there are none).
        batch =
          stored.length === 0
            ? [makeEvent(0, 0, this.payload)]
            : stored.slice(-Math.min(stored.length, this.types.length));
        break;
      case 'retry-first':
        // The first stored events again: an idempotent retry of an early batch.
        batch =
          stored.length === 0
            ? [makeEvent(0, 0, this.payload)]
            : stored.slice(0, Math.min(stored.length, this.types.length));
        break;
      case 'conflicting': {
        const at = Math.max(0, next - this.types.length);
        batch = this.types.map((t, i) => makeEvent(at + i, t, this.payload + 1_000_000));
        break;
      }
      default:
        batch = invalidBatch(this.kind, next, this.payload) as SessionEvent[];
    }
    // A store without capabilities.appendAfter may ignore after: both sides then go without it.
    const options = checksAppendAfter(current(real))
      ? afterOptions(this.after, stored, batch, this.payload)
      : undefined;
    await compare(
      this.toString(),
      () => current(model).append(this.id, batch, options),
      () => current(real).append(this.id, batch, options),
    );
  }
  toString = () =>
    `append(${this.id}, ${this.kind}, types=[${this.types}], payload=${this.payload}${this.after === 'none' ? '' : `, after=${this.after}`})`;
}

/** Create then append a first batch: most rules need sessions that exist, so they get a shortcut. */
export class StartSessionCommand implements Cmd {
  constructor(
    readonly id: string,
    readonly cwd: string | undefined,
    readonly types: number[],
  ) {}
  check = () => true;
  async run(model: ModelSide, real: RealSide) {
    await new CreateCommand(this.id, this.cwd, undefined).run(model, real);
    await new AppendCommand(this.id, 'valid', this.types, 0).run(model, real);
  }
  toString = () => `start(${this.id}, cwd=${this.cwd}, types=[${this.types}])`;
}

export class LoadCommand implements Cmd {
  constructor(
    readonly id: string,
    readonly tail: 'keep' | 'cut',
  ) {}
  check = () => true;
  async run(model: ModelSide, real: RealSide) {
    const normalize = (loaded: Awaited<ReturnType<SessionStore['load']>>) => ({
      meta: normalizeMeta(loaded.meta),
      summary: normalizeSummary(loaded.summary),
      events: loaded.events,
      committedSeq: loaded.committedSeq,
      interrupted: loaded.interrupted,
      cutEvents: loaded.recovered?.cutEvents ?? 0,
      tornBytes: loaded.recovered?.tornBytes ?? 0,
    });
    await compare(
      this.toString(),
      () => current(model).load(this.id, { tail: this.tail }),
      () => current(real).load(this.id, { tail: this.tail }),
      normalize,
    );
  }
  toString = () => `load(${this.id}, tail=${this.tail})`;
}

export class ReadCommand implements Cmd {
  constructor(
    readonly id: string,
    readonly fromSeq: number,
    readonly span: number,
    /**
     * `range`: fromSeq..fromSeq+span; `all`: no range; `from`: fromSeq only; `reversed`: toSeq <
     * fromSeq; `bad`: negative; `last`: the last span+1 events; `rangeLast`: the last 2 of the
     * range; `badLast`: last 0.
     */
    readonly shape:
      | 'range'
      | 'all'
      | 'from'
      | 'reversed'
      | 'bad'
      | 'last'
      | 'rangeLast'
      | 'badLast' = 'range',
  ) {}
  check = () => true;
  private range(): unknown {
    switch (this.shape) {
      case 'range':
        return { fromSeq: this.fromSeq, toSeq: this.fromSeq + this.span };
      case 'all':
        return undefined;
      case 'from':
        return { fromSeq: this.fromSeq };
      case 'reversed':
        return { fromSeq: this.fromSeq + this.span + 1, toSeq: this.fromSeq };
      case 'bad':
        return { fromSeq: -1 - this.fromSeq };
      case 'last':
        return { last: this.span + 1 };
      case 'rangeLast':
        return { fromSeq: this.fromSeq, toSeq: this.fromSeq + this.span, last: 2 };
      case 'badLast':
        return { fromSeq: this.fromSeq, last: 0 };
    }
  }
  async run(model: ModelSide, real: RealSide) {
    const range = this.range() as Parameters<SessionStore['read']>[1];
    const drain = async (store: SessionStore, within: typeof range) => {
      const out: SessionEvent[] = [];
      for await (const event of store.read(this.id, within)) out.push(event);
      return out;
    };
    // The model reads the whole range and keeps its last events itself, so a backend's way of
    // finding them is checked against plain slicing, not against the memory store's own.
    const last = range?.last;
    const modelRead =
      last === undefined || last < 1
        ? () => drain(current(model), range)
        : async () => (await drain(current(model), { ...range, last: undefined })).slice(-last);
    await compare(this.toString(), modelRead, () => drain(current(real), range));
  }
  toString = () => `read(${this.id}, ${JSON.stringify(this.range()) ?? 'all'})`;
}

export class HasCommand implements Cmd {
  constructor(readonly id: string) {}
  check = () => true;
  async run(model: ModelSide, real: RealSide) {
    await compare(
      this.toString(),
      () => current(model).has(this.id),
      () => current(real).has(this.id),
    );
  }
  toString = () => `has(${this.id})`;
}

export class ListCommand implements Cmd {
  constructor(
    readonly cwd: string | undefined,
    readonly limit: number,
    /** Ask for every other page on the other live instance: cursors are portable between instances. */
    readonly alternate = false,
  ) {}
  check = () => true;
  async run(model: ModelSide, real: RealSide) {
    // Order depends on each store's clock, so pages are compared as sets; the backend's own order
    // must still be newest-first by its own updatedAt, and paging must cover everything once.
    const pageAll = async (side: ModelSide | RealSide) => {
      const seen: SessionSummary[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 100; pages++) {
        const store = this.alternate && pages % 2 === 1 ? side.stores[1 - side.active]! : current(side);
        const page = await store.list({
          limit: this.limit,
          ...(this.cwd !== undefined && { cwd: this.cwd }),
          ...(cursor !== undefined && { cursor }),
        });
        if (page.problems.length > 0) violation(`${this}: problems on a healthy store`);
        if (page.sessions.length > this.limit) violation(`${this}: page longer than limit`);
        seen.push(...page.sessions);
        cursor = page.nextCursor;
        if (cursor === undefined) break;
      }
      for (let i = 1; i < seen.length; i++) {
        const a = seen[i - 1]!;
        const b = seen[i]!;
        if (!(a.updatedAt > b.updatedAt || (a.updatedAt === b.updatedAt && a.id < b.id)))
          violation(`${this}: ${a.id} listed before ${b.id}`);
      }
      const ids = seen.map((s) => s.id);
      if (new Set(ids).size !== ids.length)
        violation(`${this}: a session appeared twice while paging: ${ids}`);
      return seen
        .map(normalizeSummary)
        .sort((x, y) => ((x as { id: string }).id < (y as { id: string }).id ? -1 : 1));
    };
    await compare(
      this.toString(),
      () => pageAll(model),
      () => pageAll(real),
    );
  }
  toString = () => `list(cwd=${this.cwd}, limit=${this.limit}${this.alternate ? ', alternating' : ''})`;
}

export class UpdateCommand implements Cmd {
  constructor(
    readonly id: string,
    readonly patch: {
      title?: unknown;
      tags?: unknown;
      attrs?: unknown;
      firstPrompt?: unknown;
      colour?: unknown;
    },
  ) {}
  check = () => true;
  async run(model: ModelSide, real: RealSide) {
    const patch = this.patch as { title?: string };
    await compare(
      this.toString(),
      () => current(model).update(this.id, patch),
      () => current(real).update(this.id, patch),
      normalizeSummary,
    );
  }
  toString = () => `update(${this.id}, ${JSON.stringify(this.patch)})`;
}

export class DeleteCommand implements Cmd {
  constructor(readonly id: string) {}
  check = () => true;
  async run(model: ModelSide, real: RealSide) {
    await compare(
      this.toString(),
      () => current(model).delete(this.id),
      () => current(real).delete(this.id),
    );
  }
  toString = () => `delete(${this.id})`;
}

/** A time no session of a sequence was ever changed at. */
export const STALE_TIME = '2001-01-01T00:00:00.000Z';

/**
 * `delete(id, { ifUpdatedAt })`. `current`: each side passes the `updatedAt` its own active instance
 * reports now (clocks differ between sides), so the delete must succeed where the session exists;
 * `stale`: a version the session never had, so CONFLICT where it exists; `garbage`: INVALID.
 */
export class DeleteIfCommand implements Cmd {
  constructor(
    readonly id: string,
    readonly version: 'current' | 'stale' | 'garbage',
  ) {}
  check = () => true;
  async run(model: ModelSide, real: RealSide) {
    const versionOf = async (store: SessionStore): Promise<string> => {
      if (this.version === 'garbage') return 'not a time';
      if (this.version === 'stale') return STALE_TIME;
      try {
        return (await store.load(this.id)).summary.updatedAt;
      } catch {
        return STALE_TIME;
      }
    };
    await compare(
      this.toString(),
      async () => current(model).delete(this.id, { ifUpdatedAt: await versionOf(current(model)) }),
      async () => current(real).delete(this.id, { ifUpdatedAt: await versionOf(current(real)) }),
    );
  }
  toString = () => `delete(${this.id}, ifUpdatedAt=${this.version})`;
}

/** A malformed `list` query: INVALID on both sides. */
export class BadListCommand implements Cmd {
  constructor(readonly query: { limit?: unknown; cursor?: unknown; cwd?: unknown }) {}
  check = () => true;
  async run(model: ModelSide, real: RealSide) {
    const query = this.query as Parameters<SessionStore['list']>[0];
    await compare(
      this.toString(),
      () => current(model).list(query),
      () => current(real).list(query),
    );
  }
  toString = () => `list(${JSON.stringify(this.query)})`;
}
