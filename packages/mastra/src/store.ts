// The Mastra storage object: the memory and workflows domains on tidemark, any other domain
// composed from another Mastra store through Mastra's own composite storage, and every domain
// nobody supplied refused with a typed error that names it.
import {
  DOMAIN_KEYS,
  MastraCompositeStore,
  type MastraStorageDomains,
  type StorageDomains,
} from '@mastra/core/storage';
import { type SessionStore, TidemarkError } from '@tidemark/core';
import { TidemarkMemoryStorage } from './memory-storage.js';
import { TidemarkWorkflowsStorage } from './workflows-storage.js';

/** The domains tidemark holds itself. */
export const TIDEMARK_DOMAINS = ['memory', 'workflows'] as const;

/** A Mastra storage domain name. */
export type DomainName = keyof StorageDomains;

/** The domains another Mastra store may supply. */
export type ComposedDomains = Omit<MastraStorageDomains, (typeof TIDEMARK_DOMAINS)[number]>;

/** Options of {@link TidemarkMastraStore}. */
export interface TidemarkMastraStoreOptions {
  /** Any tidemark store: memory, JSONL, SQLite, PostgreSQL. This object never closes it. */
  store: SessionStore;
  /** The Mastra storage id (default `tidemark`). */
  id?: string;
  /**
   * Domains tidemark does not hold (scores, observability, agents, …), each from another Mastra
   * store, as in Mastra's `MastraCompositeStore({ domains })`: `{ scores: libsql.stores?.scores }`.
   */
  domains?: ComposedDomains;
  /** A Mastra store that supplies every domain not named in `domains` (Mastra's `default`). */
  default?: MastraCompositeStore;
}

/** Thrown when Mastra asks for a domain that neither tidemark nor a composed store holds. */
export class UnsupportedDomainError extends TidemarkError {
  /** The domain asked for. */
  readonly domain: string;

  constructor(domain: string) {
    super(
      'INVALID',
      `@tidemark/mastra holds the memory and workflows domains only; the ${JSON.stringify(domain)} domain was asked for but not composed: pass it as new TidemarkMastraStore({ store, domains: { ${domain}: otherStore.stores?.${domain} } }) or default: otherStore`,
    );
    this.domain = domain;
  }
}

const isDomain = (name: string): name is DomainName => (DOMAIN_KEYS as readonly string[]).includes(name);

/**
 * Mastra storage over any tidemark store. Give it to `new Mastra({ storage })` or to
 * `new Memory({ storage })`. `getStore('memory')` and `getStore('workflows')` answer from the
 * tidemark store; another domain comes from the Mastra store composed for it, and a domain that
 * none holds rejects with {@link UnsupportedDomainError} instead of answering `undefined`, which
 * Mastra would take as "not configured" and skip silently.
 */
export class TidemarkMastraStore extends MastraCompositeStore {
  /** The memory domain. */
  readonly memory: TidemarkMemoryStorage;
  /** The workflows domain. */
  readonly workflows: TidemarkWorkflowsStorage;

  constructor(options: TidemarkMastraStoreOptions) {
    if (options === null || typeof options !== 'object' || options.store === undefined) {
      throw new TidemarkError('INVALID', 'TidemarkMastraStore: options.store is required');
    }
    for (const name of Object.keys(options.domains ?? {})) {
      if (!isDomain(name) || (TIDEMARK_DOMAINS as readonly string[]).includes(name)) {
        throw new TidemarkError(
          'INVALID',
          `TidemarkMastraStore: domains.${name} is not a domain another store may supply`,
        );
      }
    }
    const memory = new TidemarkMemoryStorage(options.store);
    const workflows = new TidemarkWorkflowsStorage(options.store);
    super({
      id: options.id ?? 'tidemark',
      name: 'TidemarkMastraStore',
      ...(options.default !== undefined && { default: options.default }),
      // Mastra's composite would otherwise put thread state in process memory, silently lost on exit.
      domains: { threadState: false, ...options.domains, memory, workflows },
    });
    this.memory = memory;
    this.workflows = workflows;
    this.hasInitialized = Promise.resolve(true);
  }

  /**
   * The domain `storeName`.
   * @throws UnsupportedDomainError for a domain neither tidemark nor a composed store holds.
   */
  override async getStore<K extends DomainName>(storeName: K): Promise<StorageDomains[K] | undefined> {
    const domain = await super.getStore(storeName);
    if (domain === undefined) throw new UnsupportedDomainError(String(storeName));
    return domain;
  }
}
