// The stores the restated Mastra storage cases run on: Mastra's own in-memory store (the control)
// and TidemarkMastraStore over every tidemark backend available here.

import { randomUUID } from 'node:crypto';
import type { MastraDBMessage, StorageThreadType } from '@mastra/core/memory';
import { InMemoryStore, type MemoryStorage, type WorkflowsStorage } from '@mastra/core/storage';
import { testBackends } from '@tidemark/test-hosts';
import { TidemarkMastraStore } from '../src/index.js';

/** A store under test: its memory and workflows domains, and how to drop what it made. */
export interface Target {
  name: string;
  control: boolean;
  open(): Promise<{ memory: MemoryStorage; workflows: WorkflowsStorage }>;
  cleanup(): Promise<void>;
}

/** Mastra's in-memory store first, then tidemark on each backend. */
export async function targets(): Promise<Target[]> {
  const control: Target = {
    name: 'control: Mastra InMemoryStore',
    control: true,
    open: async () => {
      const store = new InMemoryStore();
      return { memory: (await store.getStore('memory'))!, workflows: (await store.getStore('workflows'))! };
    },
    cleanup: async () => undefined,
  };
  const ours = (await testBackends('mastra')).map(
    (backend): Target => ({
      name: `tidemark on ${backend.name}`,
      control: false,
      open: async () => {
        const storage = new TidemarkMastraStore({ store: await backend.open() });
        return {
          memory: (await storage.getStore('memory'))!,
          workflows: (await storage.getStore('workflows'))!,
        };
      },
      cleanup: () => backend.cleanup(),
    }),
  );
  return [control, ...ours];
}

/** A thread of a fresh resource (or of `resourceId`). */
export function sampleThread(overrides: Partial<StorageThreadType> = {}): StorageThreadType {
  const now = new Date();
  return {
    id: `thread-${randomUUID()}`,
    resourceId: `resource-${randomUUID()}`,
    title: 'a thread',
    metadata: { kind: 'sample' },
    createdAt: now,
    updatedAt: now,
    ...overrides,
  };
}

/** A message of `thread` with text `text`. */
export function sampleMessage(
  thread: StorageThreadType,
  text: string,
  overrides: Partial<MastraDBMessage> = {},
): MastraDBMessage {
  return {
    id: `msg-${randomUUID()}`,
    threadId: thread.id,
    resourceId: thread.resourceId,
    role: 'user',
    type: 'text',
    createdAt: new Date(),
    content: { format: 2, parts: [{ type: 'text', text }], content: text },
    ...overrides,
  };
}

/** The text of each message, in order. */
export const textsOf = (messages: readonly MastraDBMessage[]): string[] =>
  messages.map((m) => String(m.content.content));

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
