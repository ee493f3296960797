// The catalog's view in memory: one entry per known session (its summary as of a log length and a
// sidecar version, or "cannot be described"), kept in list order per bucket so that a page costs
// the page, not the store. Pure: no I/O here (catalog-file.ts reads and writes the file,
// catalog-list.ts decides what to trust).
import { compareForList, isAfterCursor, type ListCursor, type SessionSummary } from '@tidemark/core';

/** What the catalog knows of one session. */
export interface CatalogEntry {
  id: string;
  bucket: string;
  /** Length of the log the summary describes. */
  logSize: number;
  /** Version of the sidecar when the summary was taken (see sidecarStamp), '' for none. */
  sidecar: string;
  /** The summary; undefined when the session could not be described (listed as a problem). */
  summary: SessionSummary | undefined;
}

/** Entries of one bucket, with the described ones in list order. */
class BucketOrder {
  constructor(readonly name: string) {}
  readonly ids = new Set<string>();
  sorted: CatalogEntry[] = [];
  /** Where each entry of `sorted` was placed (its key then), to find it again when it moves. */
  readonly placed = new Map<string, ListCursor>();
  /** Ids changed since `sorted` was last brought up to date. */
  readonly pending = new Set<string>();
}

/** Position in `sorted` of the first entry not before `key` in list order. */
function lowerBound(sorted: readonly CatalogEntry[], key: ListCursor): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareForList(sorted[mid]!.summary!, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The catalog's sessions in memory, by id and in list order per bucket. */
export class CatalogIndex {
  private readonly entries = new Map<string, CatalogEntry>();
  private readonly buckets = new Map<string, BucketOrder>();
  private readonly problems = new Set<string>();
  /** Bucket directory mtimes as of the last complete look at each bucket. */
  readonly stamps = new Map<string, number>();

  get size(): number {
    return this.entries.size;
  }

  get(id: string): CatalogEntry | undefined {
    return this.entries.get(id);
  }

  /** Every entry (for compaction). */
  all(): IterableIterator<CatalogEntry> {
    return this.entries.values();
  }

  /** Ids of the entries of `bucket`. */
  idsIn(bucket: string): ReadonlySet<string> {
    return this.buckets.get(bucket)?.ids ?? new Set();
  }

  /** Ids of the entries that cannot be described: they are looked at again on every list. */
  problemIds(): string[] {
    return [...this.problems];
  }

  /**
   * Takes in what a record says. A summary older than the one held for the same session (same
   * id and createdAt: updatedAt only grows) is a late record and is ignored, unless `looked`
   * (the entry comes from a look at the files just now).
   */
  set(entry: CatalogEntry, looked = false): void {
    const held = this.entries.get(entry.id);
    if (
      !looked &&
      held?.summary !== undefined &&
      entry.summary !== undefined &&
      held.bucket === entry.bucket &&
      held.summary.createdAt === entry.summary.createdAt &&
      entry.summary.updatedAt < held.summary.updatedAt
    )
      return;
    if (held !== undefined && held.bucket !== entry.bucket) this.remove(entry.id);
    this.entries.set(entry.id, entry);
    if (entry.summary === undefined) this.problems.add(entry.id);
    else this.problems.delete(entry.id);
    const order = this.orderOf(entry.bucket);
    order.ids.add(entry.id);
    order.pending.add(entry.id);
  }

  remove(id: string): void {
    const held = this.entries.get(id);
    if (held === undefined) return;
    this.entries.delete(id);
    this.problems.delete(id);
    const order = this.orderOf(held.bucket);
    order.ids.delete(id);
    order.pending.add(id);
  }

  private orderOf(bucket: string): BucketOrder {
    let order = this.buckets.get(bucket);
    if (order === undefined) {
      order = new BucketOrder(bucket);
      this.buckets.set(bucket, order);
    }
    return order;
  }

  /** Brings a bucket's order up to date: moved entries one by one, or a full sort after many. */
  private settle(order: BucketOrder): void {
    if (order.pending.size === 0) return;
    if (order.pending.size > 64 && order.pending.size * 16 > order.sorted.length) {
      order.sorted = [];
      order.placed.clear();
      for (const id of order.ids) {
        const entry = this.entries.get(id)!;
        if (entry.summary === undefined) continue;
        order.sorted.push(entry);
        order.placed.set(id, { updatedAt: entry.summary.updatedAt, id });
      }
      order.sorted.sort((a, b) => compareForList(a.summary!, b.summary!));
    } else {
      for (const id of order.pending) this.move(order, id);
    }
    order.pending.clear();
  }

  private move(order: BucketOrder, id: string): void {
    const was = order.placed.get(id);
    if (was !== undefined) {
      const at = lowerBound(order.sorted, was);
      if (order.sorted[at]?.id === id) order.sorted.splice(at, 1);
      order.placed.delete(id);
    }
    const entry = this.entries.get(id);
    if (entry?.summary === undefined || entry.bucket !== order.name) return;
    const key = { updatedAt: entry.summary.updatedAt, id };
    order.sorted.splice(lowerBound(order.sorted, key), 0, entry);
    order.placed.set(id, key);
  }

  /**
   * The first `count` described entries of `buckets` after `cursor`, in list order (a merge of
   * the buckets' orders): what a page shows before verification.
   */
  head(buckets: readonly string[], cursor: ListCursor | undefined, count: number): CatalogEntry[] {
    const runs: { sorted: CatalogEntry[]; at: number }[] = [];
    for (const bucket of buckets) {
      const order = this.buckets.get(bucket);
      if (order === undefined) continue;
      this.settle(order);
      let at = cursor === undefined ? 0 : lowerBound(order.sorted, cursor);
      while (
        cursor !== undefined &&
        at < order.sorted.length &&
        !isAfterCursor(order.sorted[at]!.summary!, cursor)
      )
        at++;
      if (at < order.sorted.length) runs.push({ sorted: order.sorted, at });
    }
    const out: CatalogEntry[] = [];
    while (out.length < count) {
      let best: { sorted: CatalogEntry[]; at: number } | undefined;
      for (const run of runs) {
        if (run.at >= run.sorted.length) continue;
        if (
          best === undefined ||
          compareForList(run.sorted[run.at]!.summary!, best.sorted[best.at]!.summary!) < 0
        )
          best = run;
      }
      if (best === undefined) break;
      out.push(best.sorted[best.at++]!);
    }
    return out;
  }
}

/** Appends records to the catalog file (catalog-file.ts's CatalogAppender). */
export interface RecordSink {
  /** Resolves the token of the file written, or undefined when there is no catalog file. */
  append(text: string, durable: boolean): Promise<string | undefined>;
  reset(): Promise<void>;
}

/** One store instance's catalog: the index it follows and how far it has read the file. */
export interface CatalogState {
  readonly path: string;
  readonly sink: RecordSink;
  /** Undefined until the first list loads or rebuilds it. */
  index: CatalogIndex | undefined;
  /** Token of the file the index follows; undefined when the index is not backed by a file. */
  token: string | undefined;
  /** Bytes of that file applied to the index. */
  offset: number;
  /** Records applied since the file was last written whole: compaction is due when they pile up. */
  records: number;
}
