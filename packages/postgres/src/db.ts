// Connection hygiene around a pg Pool: per-connection settings, an error listener on every client,
// destroying a client that saw a connection fault or timeout, checked COMMITs, bounded retries of
// 40001/40P01, and a step hook for fault injection.
import { TidemarkError } from '@tidemark/core';
import type pg from 'pg';
import { isConnectionFault, isTransientConflict, mapPgError, type PgErrorContext } from './errors.js';

/** Names of the statements the store runs, passed to {@link Connections.beforeStatement}. */
export type PostgresStep =
  | 'connect'
  | 'SET'
  | 'BEGIN'
  | 'COMMIT'
  | 'ROLLBACK'
  | 'SELECT sessions'
  | 'SELECT events'
  | 'INSERT sessions+events'
  | 'UPDATE sessions+INSERT events'
  | 'UPDATE sessions'
  | 'DELETE events'
  | 'DELETE sessions'
  | 'INSERT quarantine'
  | 'MIGRATE';

/** A statement hook: whatever it throws (or rejects with) is taken as that statement's error. */
export type StatementHook = (step: PostgresStep, sessionId?: string) => void | Promise<void>;

/** Per-connection settings, applied once to each client the pool hands out. */
export interface ConnectionSettings {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
}

/** Attempts of a call that keeps failing with 40001/40P01 before the error is reported. */
export const TRANSIENT_ATTEMPTS = 4;

/** Autocommit statements that write: a connection lost during one leaves the outcome unknown. */
const AUTOCOMMIT_WRITES = new Set<PostgresStep>(['INSERT sessions+events', 'UPDATE sessions+INSERT events']);

/** What one call saw: connection faults, and the statement in flight when it failed. */
interface CallState {
  faults: unknown[];
  failedStep?: PostgresStep | undefined;
}

/** A checked-out client plus the statement runner that maps and tracks faults. */
export interface Session {
  /**
   * Runs one statement; `step` names it for the hook. With `name`, the statement is prepared once
   * per connection under that name and later only bound and executed (no parse, cached plan).
   */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    step: PostgresStep,
    text: string,
    values?: unknown[],
    name?: string,
  ): Promise<pg.QueryResult<R>>;
  /**
   * Runs one statement and returns its rows as arrays of the columns' text (NULL as null): no
   * object per row and no type parsing, for the hot reads that check and decode rows themselves.
   */
  rows(step: PostgresStep, text: string, values?: unknown[], name?: string): Promise<TextRow[]>;
  /**
   * Marks the client unusable (a failed ROLLBACK or unlock: it may still hold a transaction or a
   * session lock): when the call ends it is destroyed, never returned to the pool.
   */
  discard(reason: unknown): void;
}

/** A row as {@link Session.rows} returns it: each column's text, or null. */
export type TextRow = (string | null)[];

/** Leaves every column as the server sent it: the rows are checked and decoded by the store. */
const TEXT_TYPES = { getTypeParser: () => (text: string) => text };

/** The pool plus the rules every statement follows. */
export class Connections {
  private readonly configured = new WeakSet<pg.PoolClient>();
  private readonly listened = new WeakSet<pg.PoolClient>();

  constructor(
    readonly pool: pg.Pool,
    private readonly settings: ConnectionSettings,
    private readonly secrets: readonly string[],
    private readonly hook: StatementHook | undefined,
    private readonly warn: (message: string) => void,
  ) {}

  /** Context for error mapping, with the secrets to redact. */
  context(what: string, sessionId?: string, inFlightCommit = false): PgErrorContext {
    return {
      what,
      secrets: this.secrets,
      ...(sessionId !== undefined && { sessionId }),
      ...(inFlightCommit && { inFlightCommit }),
    };
  }

  private async checkout(sessionId: string | undefined): Promise<pg.PoolClient> {
    if (this.hook !== undefined) await this.hook('connect', sessionId);
    const client = await this.pool.connect();
    if (!this.listened.has(client)) {
      // Without a listener an 'error' on an idle or checked-out client crashes the process; the
      // failing query reports the fault itself, so the listener only keeps the process alive.
      client.on('error', (error: Error) => {
        this.warn(
          `tidemark postgres: connection error: ${mapPgError(error, this.context('connection')).message}`,
        );
      });
      this.listened.add(client);
    }
    if (!this.configured.has(client)) {
      try {
        if (this.hook !== undefined) await this.hook('SET', sessionId);
        // Integers validated at open: nothing here comes from a caller's string.
        await client.query(
          `SET synchronous_commit = on; SET statement_timeout = ${this.settings.statementTimeoutMs}; ` +
            `SET lock_timeout = ${this.settings.lockTimeoutMs}; ` +
            `SET idle_in_transaction_session_timeout = ${this.settings.idleInTransactionTimeoutMs}`,
        );
      } catch (error) {
        client.release(error instanceof Error ? error : new Error(String(error)));
        throw error;
      }
      this.configured.add(client);
    }
    return client;
  }

  private session(client: pg.PoolClient, sessionId: string | undefined, state: CallState): Session {
    const hook = this.hook;
    const run = async <T>(step: PostgresStep, send: () => Promise<T>): Promise<T> => {
      state.failedStep = step;
      try {
        if (hook !== undefined) await hook(step, sessionId);
        const result = await send();
        state.failedStep = undefined;
        return result;
      } catch (error) {
        if (isConnectionFault(error)) state.faults.push(error);
        throw error;
      }
    };
    return {
      query: <R extends pg.QueryResultRow>(
        step: PostgresStep,
        text: string,
        values?: unknown[],
        name?: string,
      ) =>
        run(step, () =>
          name === undefined
            ? client.query<R>(text, values)
            : client.query<R>({ name, text, values: values ?? [] }),
        ),
      rows: (step, text, values, name) =>
        run(step, async () => {
          const config: pg.QueryArrayConfig = {
            text,
            values: values ?? [],
            rowMode: 'array',
            types: TEXT_TYPES,
          };
          if (name !== undefined) config.name = name;
          return (await client.query(config)).rows as TextRow[];
        }),
      discard(reason: unknown) {
        state.faults.push(reason);
      },
    };
  }

  /**
   * Runs `work` on one client outside a transaction (each statement autocommits). The client is
   * destroyed when any statement saw a connection fault or timeout. Errors are mapped with
   * `context`; a lost connection during a write statement (`write`) is marked outcome unknown.
   */
  async run<T>(context: PgErrorContext, work: (s: Session) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const state: CallState = { faults: [] };
      let client: pg.PoolClient | undefined;
      try {
        client = await this.checkout(context.sessionId);
        const result = await work(this.session(client, context.sessionId, state));
        this.releaseAfter(client, state.faults, undefined);
        return result;
      } catch (error) {
        this.releaseAfter(client, state.faults, error);
        if (attempt < TRANSIENT_ATTEMPTS && isTransientConflict(error)) continue;
        const inFlightCommit = state.failedStep !== undefined && AUTOCOMMIT_WRITES.has(state.failedStep);
        throw mapPgError(error, { ...context, inFlightCommit });
      }
    }
  }

  /**
   * Runs `work` in one transaction (READ COMMITTED unless `begin` says otherwise): BEGIN, work,
   * COMMIT whose command tag must be COMMIT (a transaction that failed silently commits as
   * ROLLBACK). On error: ROLLBACK (a failed ROLLBACK destroys the client), then the mapped error.
   * 40001/40P01 are retried up to {@link TRANSIENT_ATTEMPTS} times in all.
   */
  async transaction<T>(
    context: PgErrorContext,
    work: (s: Session) => Promise<T>,
    begin = 'BEGIN',
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const state: CallState = { faults: [] };
      const faults = state.faults;
      let client: pg.PoolClient | undefined;
      let committing = false;
      try {
        client = await this.checkout(context.sessionId);
        const s = this.session(client, context.sessionId, state);
        await s.query('BEGIN', begin);
        let result: T;
        try {
          result = await work(s);
        } catch (error) {
          await this.rollback(s, faults);
          throw error;
        }
        committing = true;
        try {
          await commitChecked(s, context.what);
        } catch (error) {
          // A COMMIT that failed without the server ending the transaction (rejected before it
          // was sent) leaves it open on this client: returned to the pool, it would swallow the
          // next caller's statements and lose them at disconnect. Never reuse such a client.
          faults.push(error);
          throw error;
        }
        client.release();
        return result;
      } catch (error) {
        this.releaseAfter(client, faults, error);
        if (attempt < TRANSIENT_ATTEMPTS && isTransientConflict(error)) continue;
        throw mapPgError(error, { ...context, inFlightCommit: committing });
      }
    }
  }

  private async rollback(s: Session, faults: unknown[]): Promise<void> {
    try {
      await s.query('ROLLBACK', 'ROLLBACK');
    } catch (error) {
      // The connection may still hold the open transaction: never hand it to another call.
      faults.push(error);
    }
  }

  private releaseAfter(client: pg.PoolClient | undefined, faults: unknown[], error: unknown): void {
    if (client === undefined) return;
    if (faults.length > 0 || isConnectionFault(error)) {
      const reason = faults[0] ?? error;
      client.release(reason instanceof Error ? reason : new Error(String(reason)));
    } else {
      client.release();
    }
  }
}

/**
 * Sends COMMIT and checks its command tag: pg answers COMMIT to a transaction that committed and
 * ROLLBACK to one that had already failed (an error swallowed somewhere), which must not look like
 * success. That case is IO, retryable: nothing was written.
 */
export async function commitChecked(s: Session, what: string): Promise<void> {
  const result = await s.query('COMMIT', 'COMMIT');
  if (result.command !== 'COMMIT') {
    throw new TidemarkError(
      'IO',
      `${what}: COMMIT answered ${String(result.command)}: the transaction had failed and was rolled back; nothing was written`,
      { errno: 'ROLLBACK', retryable: true },
    );
  }
}
