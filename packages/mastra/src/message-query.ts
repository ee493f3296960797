// The pure part of `listMessages`: filters, order, pages and included context, over folded threads.
import {
  calculatePagination,
  filterByDateRange,
  normalizePerPage,
  type StorageListMessagesInput,
  type StorageListMessagesOutput,
  storageMessageMatchesMetadataFilter,
  validateStorageMetadataFilter,
} from '@mastra/core/storage';
import { TidemarkError } from '@tidemark/core';
import { decodeMessage } from './records.js';
import { type FoldedThread, inStoredOrder, type PlacedMessage, type StoredMessage } from './thread-log.js';

/** Messages per page when Mastra asks for none. */
export const DEFAULT_MESSAGES_PER_PAGE = 40;

/** The page arguments of a list call, checked. */
export interface PageArgs {
  page: number;
  perPage: number;
  offset: number;
  perPageOut: number | false;
}

/**
 * Checked page arguments.
 * @throws TidemarkError INVALID for a negative or non-integer page or page size.
 */
export function pageArgs(
  page: unknown,
  perPageInput: number | false | undefined,
  fallback: number,
): PageArgs {
  if (typeof page !== 'number' || !Number.isSafeInteger(page) || page < 0) {
    throw new TidemarkError('INVALID', `page: must be a non-negative integer, got ${String(page)}`);
  }
  let perPage: number;
  try {
    perPage = normalizePerPage(perPageInput, fallback);
  } catch (error) {
    throw new TidemarkError('INVALID', `perPage: ${(error as Error).message}`, { cause: error });
  }
  if (perPageInput === false && page !== 0) {
    throw new TidemarkError('INVALID', 'page: must be 0 when perPage is false (every record on one page)');
  }
  if (page * perPage > Number.MAX_SAFE_INTEGER / 2)
    throw new TidemarkError('INVALID', 'page: value too large');
  const { offset, perPage: perPageOut } = calculatePagination(page, perPageInput, perPage);
  return { page, perPage, offset, perPageOut };
}

/** The messages of the listed threads that pass the call's filters, in the asked order. */
export function selectMessages(
  threads: readonly FoldedThread[],
  args: StorageListMessagesInput,
  direction: 'ASC' | 'DESC',
): StoredMessage[] {
  const metadata = validateStorageMetadataFilter(args.filter?.metadata);
  let placed: PlacedMessage[] = threads.flatMap((thread) => [...thread.messages.values()]);
  if (args.resourceId !== undefined) placed = placed.filter((p) => p.message.resourceId === args.resourceId);
  placed = filterByDateRange(placed, (p) => new Date(p.message.createdAt), args.filter?.dateRange);
  placed = placed.filter((p) => storageMessageMatchesMetadataFilter(p.message.content, metadata));
  return inStoredOrder(placed, direction);
}

/**
 * The message `id` of `thread` with up to `before` messages before it and `after` after it, in
 * stored order; [] when the thread does not hold it (or it lies outside `resourceId`).
 */
export function contextOf(
  thread: FoldedThread,
  id: string,
  before: number,
  after: number,
  resourceId: string | undefined,
): StoredMessage[] {
  let window = [...thread.messages.values()];
  if (resourceId !== undefined) window = window.filter((p) => p.message.resourceId === resourceId);
  const ordered = inStoredOrder(window);
  const at = ordered.findIndex((m) => m.id === id);
  if (at === -1) return [];
  return ordered.slice(Math.max(0, at - before), at + after + 1);
}

/** Assembles Mastra's answer from the selected messages, the page and the included ones. */
export function answer(
  selected: readonly StoredMessage[],
  included: readonly StoredMessage[],
  args: StorageListMessagesInput,
  page: PageArgs,
  direction: 'ASC' | 'DESC',
): StorageListMessagesOutput {
  const total = page.perPage === 0 ? 0 : selected.length;
  const onPage = page.perPage === 0 ? [] : selected.slice(page.offset, page.offset + page.perPage);
  const seen = new Set(onPage.map((m) => m.id));
  const all = [...onPage];
  for (const message of included) {
    if (seen.has(message.id)) continue;
    seen.add(message.id);
    all.push(message);
  }
  const sign = direction === 'ASC' ? 1 : -1;
  const position = new Map(selected.map((m, i) => [m.id, i]));
  // Included messages from elsewhere go by time; messages of the selection keep its order.
  all.sort(
    (a, b) =>
      sign * (new Date(a.createdAt).getTime() - new Date(b.createdAt).getTime()) ||
      (position.get(a.id) ?? 0) - (position.get(b.id) ?? 0),
  );
  let hasMore: boolean;
  if (page.perPage === 0) hasMore = false;
  else if (args.filter?.metadata !== undefined) hasMore = page.offset + onPage.length < total;
  else if (args.include !== undefined && args.include.length > 0) {
    const ofThread = new Set(all.filter((m) => m.threadId === args.threadId).map((m) => m.id));
    hasMore = ofThread.size < total;
  } else hasMore = page.offset + page.perPage < total;
  return { messages: all.map(decodeMessage), total, page: page.page, perPage: page.perPageOut, hasMore };
}
