// A store that only lists: many summaries without events, and problems, so that paging and
// search bounds can be tested at sizes no real backend seeds quickly.
import {
  type ListProblem,
  pageOf,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  TidemarkError,
  validateListQuery,
} from '@tidemark/core';

/** Summaries `s-00000`… updated one second apart, the last the newest. */
export function summaries(
  count: number,
  shape: (i: number) => Partial<SessionSummary> = () => ({}),
): SessionSummary[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `s-${String(i).padStart(5, '0')}`,
    createdAt: new Date(Date.UTC(2025, 0, 1) + i * 1000).toISOString(),
    updatedAt: new Date(Date.UTC(2025, 0, 1) + i * 1000).toISOString(),
    eventCount: 2,
    committedSeq: 1,
    interrupted: false,
    ...shape(i),
  }));
}

/** A list-only store over `rows`; counts the summaries its pages handed out. */
export class ListOnlyStore implements SessionStore {
  listed = 0;
  constructor(
    private readonly rows: SessionSummary[],
    private readonly problems: ListProblem[] = [],
  ) {}
  async list(query?: unknown): Promise<SessionPage> {
    const page = pageOf(this.rows, validateListQuery(query ?? {}), this.problems);
    this.listed += page.sessions.length;
    return page;
  }
  async has(id: string): Promise<boolean> {
    return this.rows.some((row) => row.id === id);
  }
  private refuse(): never {
    throw new TidemarkError('IO', 'this test store only lists');
  }
  create(): never {
    this.refuse();
  }
  append(): never {
    this.refuse();
  }
  load(): never {
    this.refuse();
  }
  read(): never {
    this.refuse();
  }
  update(): never {
    this.refuse();
  }
  delete(): never {
    this.refuse();
  }
  async close(): Promise<void> {}
}
