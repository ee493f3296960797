import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { type BackendReply, BackendReplyWatcher, FrontendCommitWatcher } from './pg-wire.js';

/**
 * What the proxy does to a connection's traffic. Switch at run time with
 * {@link FaultProxy.setFault} (every connection) or {@link ProxyConnection.setFault} (one).
 *
 * - `pass`: forward both ways.
 * - `drop`: destroy both sockets at once (new connections are closed as soon as accepted).
 * - `blackhole`: stop forwarding and stop reading, sockets stay open (a partition; TCP back-pressure
 *   holds the data, so switching back to `pass` delivers it, as a healed network would).
 * - `delay`: hold each chunk `ms` milliseconds, in order, both ways.
 * - `cut`: forward `afterBytes` more bytes in `direction`, then destroy both sockets.
 * - `commit-then-cut`: forward a message whose SQL is COMMIT/END (simple Query, or extended Execute
 *   of such a statement), destroy the client socket at once, and keep the server socket until the
 *   server has answered (ReadyForQuery) so that the commit really completes; the reply is
 *   swallowed. The outcome is known to the server and unknown to the client. `writes: true` also
 *   cuts after a writing statement (INSERT/UPDATE/DELETE, or a WITH holding one): outside BEGIN
 *   such a statement commits on its own, so its reply is a commit's reply (single-statement
 *   appends). `once: true`: only the first match is cut, and the proxy then switches every
 *   connection to `pass` (so that the retry of the same call goes through).
 */
export type ProxyFault =
  | { mode: 'pass' }
  | { mode: 'drop' }
  | { mode: 'blackhole' }
  | { mode: 'delay'; ms: number }
  | { mode: 'cut'; direction: 'to-server' | 'to-client'; afterBytes: number }
  | { mode: 'commit-then-cut'; writes?: boolean; once?: boolean };

/** A COMMIT the proxy forwarded and whose reply it withheld. */
export interface CutCommit {
  connectionId: number;
  /** What the server answered, as far as it was read before the server socket was closed. */
  reply: BackendReply;
}

/** Options of {@link startFaultProxy}. */
export interface FaultProxyOptions {
  /** The server to forward to. */
  target: { host: string; port: number };
  /** Fault of new connections until {@link FaultProxy.setFault} is called (default `pass`). */
  fault?: ProxyFault;
  /** How long to wait for the server's reply to a cut COMMIT before closing anyway (default 5 s). */
  commitReplyTimeoutMs?: number;
}

/** One proxied connection. */
export interface ProxyConnection {
  readonly id: number;
  readonly fault: ProxyFault;
  /** Bytes forwarded so far, per direction. */
  readonly bytes: { toServer: number; toClient: number };
  readonly closed: boolean;
  setFault(fault: ProxyFault): void;
}

/** A running TCP fault proxy (see {@link startFaultProxy}). */
export interface FaultProxy {
  readonly host: string;
  readonly port: number;
  /** The fault new connections get. */
  readonly fault: ProxyFault;
  /** Live connections. */
  readonly connections: readonly ProxyConnection[];
  /** Connections accepted so far. */
  readonly accepted: number;
  /** COMMITs forwarded and cut, with the server's reply to each (filled once it is known). */
  readonly cutCommits: readonly CutCommit[];
  /** `connectionString` with its host and port replaced by the proxy's. */
  via(connectionString: string): string;
  /** Sets the fault of every live connection and of the connections accepted from now on. */
  setFault(fault: ProxyFault): void;
  /** Resolves once a COMMIT was cut and the server's reply to it has been read (or timed out). */
  nextCutCommit(): Promise<CutCommit>;
  /** Destroys every connection and stops listening. */
  close(): Promise<void>;
}

type Direction = 'toServer' | 'toClient';

interface ProxyHooks {
  commitReplyTimeoutMs: number;
  onCutCommit(cut: CutCommit): void;
  /** Called when a connection is about to cut: false when a `once` fault has already fired. */
  claimCut(fault: ProxyFault): boolean;
  onClose(connection: Connection): void;
}

class Connection implements ProxyConnection {
  readonly bytes = { toServer: 0, toClient: 0 };
  closed = false;
  fault: ProxyFault = { mode: 'pass' };
  private cutBudget = 0;
  /** Chunk delivery chain per direction, so delayed chunks keep their order. */
  private readonly queue: Record<Direction, Promise<void>> = {
    toServer: Promise.resolve(),
    toClient: Promise.resolve(),
  };
  private readonly commits = new FrontendCommitWatcher();
  private readonly draining: Record<Direction, boolean> = { toServer: false, toClient: false };
  private replyWatcher: BackendReplyWatcher | undefined;

  constructor(
    readonly id: number,
    private readonly client: Socket,
    private readonly server: Socket,
    private readonly hooks: ProxyHooks,
    fault: ProxyFault,
  ) {
    // Once a COMMIT was cut the client is gone on purpose; the server is still heard out.
    client.on('error', () => this.replyWatcher === undefined && this.destroy());
    client.on('close', () => this.replyWatcher === undefined && this.destroy());
    server.on('error', () => this.destroy());
    server.on('close', () => this.destroy());
    client.on('data', (chunk: Buffer) => this.fromClient(chunk));
    server.on('data', (chunk: Buffer) => this.fromServer(chunk));
    this.setFault(fault);
  }

  setFault(fault: ProxyFault): void {
    if (this.closed) return;
    this.fault = fault;
    if (fault.mode === 'cut') this.cutBudget = fault.afterBytes;
    if (fault.mode === 'drop') this.destroy();
    else if (fault.mode === 'blackhole') {
      this.client.pause();
      this.server.pause();
    } else if (this.replyWatcher === undefined) {
      this.client.resume();
      this.server.resume();
    }
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.destroy();
    this.server.destroy();
    if (this.replyWatcher !== undefined)
      this.hooks.onCutCommit({ connectionId: this.id, reply: this.replyWatcher.reply });
    this.hooks.onClose(this);
  }

  private fromClient(chunk: Buffer): void {
    if (this.replyWatcher !== undefined) return;
    // The watcher sees every chunk, so its framing stays in step whatever the fault.
    const seen = this.commits.feedStatements(chunk);
    const fault = this.fault;
    if (fault.mode === 'commit-then-cut') {
      const hits = seen.commits + (fault.writes === true ? seen.writes : 0);
      if (hits > 0 && this.hooks.claimCut(fault)) {
        this.forward('toServer', chunk);
        this.cutAfterCommit();
        return;
      }
    }
    this.forward('toServer', chunk);
  }

  private fromServer(chunk: Buffer): void {
    if (this.replyWatcher === undefined) this.forward('toClient', chunk);
    else if (this.replyWatcher.feed(chunk).ready) this.destroy();
  }

  private forward(direction: Direction, chunk: Buffer): void {
    const fault = this.fault;
    if (fault.mode === 'cut' && (fault.direction === 'to-server') === (direction === 'toServer')) {
      const allowed = chunk.subarray(0, this.cutBudget);
      this.cutBudget -= allowed.length;
      if (allowed.length > 0) this.write(direction, allowed);
      const to = direction === 'toServer' ? this.server : this.client;
      // end(), not destroy(): the allowed bytes must leave before the connection is torn down.
      if (this.cutBudget === 0) void this.queue[direction].then(() => to.end(() => this.destroy()));
      return;
    }
    if (fault.mode === 'delay') {
      this.queue[direction] = this.queue[direction].then(
        () => new Promise<void>((resolve) => setTimeout(resolve, fault.ms)),
      );
    }
    this.write(direction, chunk);
  }

  private write(direction: Direction, chunk: Buffer): void {
    const [from, to] = direction === 'toServer' ? [this.client, this.server] : [this.server, this.client];
    this.queue[direction] = this.queue[direction].then(() => {
      if (this.closed || to.destroyed) return;
      this.bytes[direction] += chunk.length;
      // Back-pressure: stop reading the sender until the receiver drains.
      if (!to.write(chunk) && !this.draining[direction]) {
        this.draining[direction] = true;
        from.pause();
        to.once('drain', () => {
          this.draining[direction] = false;
          if (this.fault.mode !== 'blackhole' && this.replyWatcher === undefined) from.resume();
        });
      }
    });
  }

  /** The client is gone the moment its COMMIT is on its way; the server is heard out first. */
  private cutAfterCommit(): void {
    this.replyWatcher = new BackendReplyWatcher();
    void this.queue.toServer.then(() => {
      this.client.destroy();
      setTimeout(() => this.destroy(), this.hooks.commitReplyTimeoutMs).unref();
    });
  }
}

function parseTarget(connectionString: string): URL {
  const url = new URL(connectionString);
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')
    throw new Error('expected a postgres:// connection string');
  return url;
}

/**
 * Starts a TCP proxy on 127.0.0.1 (a free port) in front of a PostgreSQL server, whose fault mode
 * can be switched at run time for all connections or one. Point the client at
 * {@link FaultProxy.via}(connectionString).
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const live = new Set<Connection>();
  const cutCommits: CutCommit[] = [];
  const waiters: ((cut: CutCommit) => void)[] = [];
  let fault: ProxyFault = options.fault ?? { mode: 'pass' };
  let nextId = 1;
  const firedOnce = new WeakSet<ProxyFault>();
  const hooks: ProxyHooks = {
    commitReplyTimeoutMs: options.commitReplyTimeoutMs ?? 5000,
    onCutCommit(cut) {
      cutCommits.push(cut);
      for (const resolve of waiters.splice(0)) resolve(cut);
    },
    claimCut(cutting) {
      if (cutting.mode !== 'commit-then-cut' || cutting.once !== true) return true;
      if (firedOnce.has(cutting)) return false; // already fired on another connection
      firedOnce.add(cutting);
      const pass: ProxyFault = { mode: 'pass' };
      if (fault === cutting) fault = pass;
      for (const connection of [...live]) if (connection.fault === cutting) connection.setFault(pass);
      return true;
    },
    onClose: (connection) => live.delete(connection),
  };
  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    const upstream = netConnect(options.target.port, options.target.host);
    upstream.setNoDelay(true);
    client.setNoDelay(true);
    const connection = new Connection(nextId++, client, upstream, hooks, fault);
    if (!connection.closed) live.add(connection);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no TCP address');
  return {
    host: '127.0.0.1',
    port: address.port,
    get fault() {
      return fault;
    },
    get connections() {
      return [...live];
    },
    get accepted() {
      return nextId - 1;
    },
    cutCommits,
    via(connectionString) {
      const url = parseTarget(connectionString);
      url.hostname = '127.0.0.1';
      url.port = String(address.port);
      return url.toString();
    },
    setFault(next) {
      fault = next;
      for (const connection of [...live]) connection.setFault(next);
    },
    nextCutCommit: () => new Promise<CutCommit>((resolve) => waiters.push(resolve)),
    async close() {
      for (const connection of [...live]) connection.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The `{ host, port }` a postgres:// connection string points at (defaults: localhost:5432). */
export function targetOf(connectionString: string): { host: string; port: number } {
  const url = parseTarget(connectionString);
  return { host: url.hostname || 'localhost', port: url.port === '' ? 5432 : Number(url.port) };
}
