// Mastra's memory records as stored JSON and back: threads, messages, resources.
import type { MastraDBMessage, StorageThreadType } from '@mastra/core/memory';
import type { StorageResourceType } from '@mastra/core/storage';
import { nowIso, TidemarkError } from '@tidemark/core';
import { isoOf, type JsonObject, toJson, toJsonObject, withDates } from './codec.js';
import { checkId } from './ids.js';
import type { StoredMessage } from './thread-log.js';

/** A thread as stored: `StorageThreadType` with ISO dates. */
export function encodeThread(thread: StorageThreadType, what = 'thread'): JsonObject {
  if (thread === null || typeof thread !== 'object')
    throw new TidemarkError('INVALID', `${what}: expected an object`);
  checkId(thread.id, `${what}.id`);
  checkId(thread.resourceId, `${what}.resourceId`);
  if (thread.title !== undefined && typeof thread.title !== 'string') {
    throw new TidemarkError('INVALID', `${what}.title: expected a string`);
  }
  const now = nowIso();
  return toJsonObject(
    {
      ...thread,
      createdAt: isoOf(thread.createdAt, `${what}.createdAt`, now),
      updatedAt: isoOf(thread.updatedAt, `${what}.updatedAt`, now),
      ...(thread.metadata !== undefined && { metadata: toJsonObject(thread.metadata, `${what}.metadata`) }),
    },
    what,
  );
}

/** A stored thread as Mastra's `StorageThreadType` (fresh objects). */
export const decodeThread = (record: JsonObject): StorageThreadType =>
  withDates<StorageThreadType>(structuredClone(record), ['createdAt', 'updatedAt']);

/**
 * A message as stored, checked: an id, a thread, a role and a creation time.
 * @throws TidemarkError INVALID naming the message and the field.
 */
export function encodeMessage(message: MastraDBMessage, where: string): StoredMessage {
  if (message === null || typeof message !== 'object')
    throw new TidemarkError('INVALID', `${where}: expected a message`);
  checkId(message.id, `${where}.id`);
  checkId(message.threadId, `${where}.threadId`);
  if (typeof message.role !== 'string')
    throw new TidemarkError('INVALID', `${where}.role: expected a string`);
  if (message.content === null || typeof message.content !== 'object') {
    throw new TidemarkError('INVALID', `${where}.content: expected an object`);
  }
  return toJson(
    { ...message, createdAt: isoOf(message.createdAt, `${where}.createdAt`, nowIso()) },
    where,
  ) as StoredMessage;
}

/** A stored message as Mastra's `MastraDBMessage` (fresh objects). */
export const decodeMessage = (message: StoredMessage): MastraDBMessage =>
  withDates<MastraDBMessage>(structuredClone(message), ['createdAt']);

/** A resource as stored. */
export function encodeResource(resource: StorageResourceType, what = 'resource'): JsonObject {
  if (resource === null || typeof resource !== 'object')
    throw new TidemarkError('INVALID', `${what}: expected an object`);
  checkId(resource.id, `${what}.id`);
  if (resource.workingMemory !== undefined && typeof resource.workingMemory !== 'string') {
    throw new TidemarkError('INVALID', `${what}.workingMemory: expected a string`);
  }
  const now = nowIso();
  return toJsonObject(
    {
      ...resource,
      createdAt: isoOf(resource.createdAt, `${what}.createdAt`, now),
      updatedAt: isoOf(resource.updatedAt, `${what}.updatedAt`, now),
    },
    what,
  );
}

/** A stored resource as Mastra's `StorageResourceType` (fresh objects). */
export const decodeResource = (record: JsonObject): StorageResourceType =>
  withDates<StorageResourceType>(structuredClone(record), ['createdAt', 'updatedAt']);

/** A time after `previous` (an ISO string): now, or one millisecond later when now is not later. */
export function laterThan(previous: unknown): string {
  const before = typeof previous === 'string' ? new Date(previous).getTime() : Number.NaN;
  const now = Date.now();
  return new Date(Number.isNaN(before) || now > before ? now : before + 1).toISOString();
}
