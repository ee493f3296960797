import pg from 'pg';

/** How a store is expected to treat a SQLSTATE class (issue 11's mapping), for the harness cells. */
export type SqlStateClass =
  /** The connection is gone: IO, retryable, the client must be destroyed. */
  | 'connection'
  /** Serialization failure or deadlock: retried a bounded number of times inside the store. */
  | 'retry'
  /** Permission, missing table, read-only: IO, not retryable, never NOT_FOUND. */
  | 'refused'
  /** Statement or lock timeout: IO, retryable. */
  | 'timeout';

interface SqlStateInfo {
  name: string;
  class: SqlStateClass;
  severity: 'ERROR' | 'FATAL';
  message: string;
}

/** The SQLSTATEs the statement sweep injects, with PostgreSQL's own message for each. */
export const FAULT_SQLSTATES = {
  '08006': {
    name: 'connection_failure',
    class: 'connection',
    severity: 'FATAL',
    message: 'connection to server was lost',
  },
  '57P01': {
    name: 'admin_shutdown',
    class: 'connection',
    severity: 'FATAL',
    message: 'terminating connection due to administrator command',
  },
  '53300': {
    name: 'too_many_connections',
    class: 'connection',
    severity: 'FATAL',
    message: 'sorry, too many clients already',
  },
  '40001': {
    name: 'serialization_failure',
    class: 'retry',
    severity: 'ERROR',
    message: 'could not serialize access due to concurrent update',
  },
  '40P01': { name: 'deadlock_detected', class: 'retry', severity: 'ERROR', message: 'deadlock detected' },
  '42501': {
    name: 'insufficient_privilege',
    class: 'refused',
    severity: 'ERROR',
    message: 'permission denied for table events',
  },
  '42P01': {
    name: 'undefined_table',
    class: 'refused',
    severity: 'ERROR',
    message: 'relation "events" does not exist',
  },
  '25006': {
    name: 'read_only_sql_transaction',
    class: 'refused',
    severity: 'ERROR',
    message: 'cannot execute INSERT in a read-only transaction',
  },
  '57014': {
    name: 'query_canceled',
    class: 'timeout',
    severity: 'ERROR',
    message: 'canceling statement due to statement timeout',
  },
  '55P03': {
    name: 'lock_not_available',
    class: 'timeout',
    severity: 'ERROR',
    message: 'canceling statement due to lock timeout',
  },
} as const satisfies Record<string, SqlStateInfo>;

/** A SQLSTATE the statement sweep can inject. */
export type FaultSqlState = keyof typeof FAULT_SQLSTATES;

/**
 * Every injectable SQLSTATE, connection classes first (spelled out: `Object.keys` would put the
 * all-digit codes first, as integer-like keys).
 */
export const FAULT_SQLSTATE_LIST: readonly FaultSqlState[] = [
  '08006',
  '57P01',
  '53300',
  '40001',
  '40P01',
  '42501',
  '42P01',
  '25006',
  '57014',
  '55P03',
];

/** An error shaped exactly like the `DatabaseError` pg raises for a server ErrorResponse. */
export function pgErrorFor(sqlstate: FaultSqlState): pg.DatabaseError {
  const info: SqlStateInfo = FAULT_SQLSTATES[sqlstate];
  const error = new pg.DatabaseError(info.message, info.message.length, 'error');
  error.severity = info.severity;
  error.code = sqlstate;
  return error;
}

/** What happens at the planned statement. */
export type StatementFault =
  /** Reject with {@link pgErrorFor} without sending the statement. */
  | { kind: 'error'; sqlstate: FaultSqlState }
  /** End the backend that would run it (`pg_terminate_backend`, waited for), then send it. */
  | { kind: 'terminate' };

/** Fault statement `at` (1-based, counted over every query through the wrapper). */
export interface StatementFaultPlan {
  at: number;
  fault: StatementFault;
  /** `once` (default): statement `at` only; `persistent`: `at` and every later one (errors only). */
  mode?: 'once' | 'persistent';
}

/** Counts and faults the statements of a wrapped pool or client. */
export interface StatementFaultControl {
  /** Statements issued so far (faulted ones included). */
  readonly statements: number;
  /** The SQL text of each statement, in order (`trace[0]` is statement 1). */
  readonly trace: readonly string[];
  /** Statements faulted so far. */
  readonly injected: number;
  /** Replaces the plan; the statement count goes on. */
  arm(plan: StatementFaultPlan | undefined): void;
  /** No more faults (clients already broken stay broken, as real dead connections would). */
  lift(): void;
}

/** Options of {@link faultyPool} and {@link faultyClient}. */
export interface StatementFaultOptions {
  /**
   * Where `terminate` connects to end the backend (default: the wrapped pool's or client's own
   * connection settings; ending a backend of one's own role needs no privilege).
   */
  terminateWith?: string | pg.ClientConfig;
}

type Faults = { readonly faults: StatementFaultControl };
/** A `pg.Pool` whose statements are counted and faulted; clients it hands out are wrapped too. */
export type FaultyPool = pg.Pool & Faults;
/** A `pg.Client` whose statements are counted and faulted. */
export type FaultyClient = pg.Client & Faults;

/** pg's own message once a client's connection has failed. */
const NOT_QUERYABLE = 'Client has encountered a connection error and is not queryable';

type QueryArgs = unknown[];
type RealQuery = (...args: QueryArgs) => unknown;
type Decision = { action: 'pass' } | { action: 'error'; error: Error } | { action: 'terminate' };

function sqlOf(args: QueryArgs): string {
  const first = args[0];
  if (typeof first === 'string') return first;
  const text = (first as { text?: unknown } | null)?.text;
  return typeof text === 'string' ? text : '';
}

function isSubmittable(args: QueryArgs): boolean {
  return typeof (args[0] as { submit?: unknown } | null)?.submit === 'function';
}

/** Settles a query's promise through the caller's callback when one was given. */
function settle(args: QueryArgs, result: Promise<unknown>): unknown {
  const callback = args[args.length - 1];
  if (typeof callback !== 'function') return result;
  result.then(
    (value) => callback(undefined, value),
    (error: unknown) => callback(error),
  );
  return undefined;
}

class Controller implements StatementFaultControl {
  statements = 0;
  injected = 0;
  readonly trace: string[] = [];
  /** Clients a connection-class error was injected on: they stay unusable. */
  readonly broken = new WeakSet<object>();
  private plan: StatementFaultPlan | undefined;

  constructor(plan: StatementFaultPlan | undefined) {
    this.plan = plan;
  }

  arm(plan: StatementFaultPlan | undefined): void {
    this.plan = plan;
  }

  lift(): void {
    this.plan = undefined;
  }

  /** Counts a statement and decides its fate. */
  next(sql: string, client: object | undefined): Decision {
    this.statements++;
    this.trace.push(sql);
    if (client !== undefined && this.broken.has(client))
      return { action: 'error', error: new Error(NOT_QUERYABLE) };
    const plan = this.plan;
    const n = this.statements;
    if (plan === undefined || n < plan.at) return { action: 'pass' };
    if (n > plan.at && (plan.mode !== 'persistent' || plan.fault.kind === 'terminate'))
      return { action: 'pass' };
    this.injected++;
    if (plan.fault.kind === 'terminate') return { action: 'terminate' };
    const info: SqlStateInfo = FAULT_SQLSTATES[plan.fault.sqlstate];
    if (info.class === 'connection' && client !== undefined) this.broken.add(client);
    return { action: 'error', error: pgErrorFor(plan.fault.sqlstate) };
  }
}

async function terminateBackendOf(client: pg.ClientBase, config: string | pg.ClientConfig): Promise<void> {
  const pid = (client as unknown as { processID?: unknown }).processID;
  if (typeof pid !== 'number') throw new Error('the client has no backend pid (not connected)');
  const admin = new pg.Client(typeof config === 'string' ? { connectionString: config } : config);
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    // The timeout makes the call wait until the backend has exited, so the fault is in place.
    await admin.query('SELECT pg_terminate_backend($1::int, 5000)', [pid]);
  } finally {
    await admin.end().catch(() => undefined);
  }
}

/** Wraps a client's `query` (pool clients and plain clients alike). */
function wrapClient<C extends pg.ClientBase>(
  client: C,
  control: Controller,
  terminateWith: string | pg.ClientConfig,
): C & Faults {
  const realQuery = client.query.bind(client) as RealQuery;
  const query = (...args: QueryArgs): unknown => {
    if (isSubmittable(args)) return realQuery(...args);
    const decision = control.next(sqlOf(args), client);
    if (decision.action === 'pass') return realQuery(...args);
    if (decision.action === 'error') return settle(args, Promise.reject(decision.error));
    const plain = typeof args[args.length - 1] === 'function' ? args.slice(0, -1) : args;
    return settle(
      args,
      terminateBackendOf(client, terminateWith).then(() => realQuery(...plain)),
    );
  };
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'query') return query;
      if (property === 'faults') return control;
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as C & Faults;
}

function clientConfigOf(client: pg.Client): pg.ClientConfig {
  const params = (client as unknown as { connectionParameters?: pg.ClientConfig }).connectionParameters;
  const { host, port, user, database, password } = params ?? client;
  return { host, port, user, database, ...(typeof password === 'string' && { password }) };
}

/**
 * Wraps a `pg.Client`: every `query` is a statement, counted over the client's life; at the
 * planned statement it rejects with a pg `DatabaseError` of the SQLSTATE (nothing sent), or the
 * backend is really ended first. After a connection-class SQLSTATE (08006, 57P01, 53300) the
 * client stays unusable, as a dead connection would.
 */
export function faultyClient(
  client: pg.Client,
  plan?: StatementFaultPlan,
  options: StatementFaultOptions = {},
): FaultyClient {
  return wrapClient(client, new Controller(plan), options.terminateWith ?? clientConfigOf(client));
}

/**
 * Wraps a `pg.Pool` like {@link faultyClient}: `pool.query` and the `query` of every client
 * `pool.connect()` hands out share one statement count. A pool client broken by a
 * connection-class fault stays broken if the store returns it to the pool without an error (so a
 * store that keeps dead clients is caught); `release(error)` destroys it as pg does.
 */
export function faultyPool(
  pool: pg.Pool,
  plan?: StatementFaultPlan,
  options: StatementFaultOptions = {},
): FaultyPool {
  const control = new Controller(plan);
  const terminateWith = options.terminateWith ?? pool.options;
  const wrapped = new WeakMap<pg.PoolClient, pg.PoolClient>();
  const wrap = (client: pg.PoolClient): pg.PoolClient => {
    let proxy = wrapped.get(client);
    if (proxy === undefined) {
      proxy = wrapClient(client, control, terminateWith);
      wrapped.set(client, proxy);
    }
    return proxy;
  };
  const connect = (...args: unknown[]): unknown => {
    const callback = args[0];
    const connected = pool.connect().then(wrap);
    if (typeof callback !== 'function') return connected;
    connected.then(
      (client) => callback(undefined, client, (release?: Error | boolean) => client.release(release)),
      (error: unknown) => callback(error, undefined, () => undefined),
    );
    return undefined;
  };
  const realQuery = pool.query.bind(pool) as RealQuery;
  const query = (...args: QueryArgs): unknown => {
    if (isSubmittable(args)) return realQuery(...args);
    const decision = control.next(sqlOf(args), undefined);
    if (decision.action === 'pass') return realQuery(...args);
    if (decision.action === 'error') return settle(args, Promise.reject(decision.error));
    const plain = typeof args[args.length - 1] === 'function' ? args.slice(0, -1) : args;
    const run = async () => {
      const client = await pool.connect();
      // This client is the wrapper's own (pool.query hides it from the caller), so the wrapper
      // listens for the connection error the termination raises on it.
      const ignore = () => undefined;
      client.on('error', ignore);
      let failure: Error | undefined;
      try {
        await terminateBackendOf(client, terminateWith);
        return await (client.query.bind(client) as RealQuery)(...plain);
      } catch (error) {
        failure = error as Error;
        throw error;
      } finally {
        client.release(failure ?? true);
        client.removeListener('error', ignore);
      }
    };
    return settle(args, run());
  };
  return new Proxy(pool, {
    get(target, property, receiver) {
      if (property === 'query') return query;
      if (property === 'connect') return connect;
      if (property === 'faults') return control;
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as FaultyPool;
}
