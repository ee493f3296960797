// The local session browser's HTTP server: loopback only, every request checked for the secret
// token in the first path segment (compared in constant time), strict security headers on every
// response, and no response without a status that says what happened; a failure never crashes it.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type SessionStore, TidemarkError } from '@tidemark/core';
import { errorJson } from './errors.js';
import { loadAppPage } from './pages.js';
import type { SessionPresenter } from './queries.js';
import { send, sendErrorJson } from './respond.js';
import { routeRequest } from './routes.js';

/** Options of {@link startSessionBrowser}. */
export interface SessionBrowserOptions {
  /** The store to browse. It is only read; closing the browser leaves it open. */
  store: SessionStore;
  /** TCP port; 0 (the default) picks a free one. */
  port?: number;
  /** Loopback address to bind: `127.0.0.1` (default), `::1` or another 127.x.y.z. */
  host?: string;
  /**
   * How the pages and the JSON API show summaries and events (the export streams them as the
   * store returns them). Default: as they are.
   */
  presenter?: SessionPresenter;
}

/** A running session browser. */
export interface SessionBrowser {
  /** The address to open, with the token: `http://127.0.0.1:PORT/TOKEN/`. */
  url: string;
  /** The port bound. */
  port: number;
  /** Stops serving and drops open connections. Does not close the store. */
  close(): Promise<void>;
}

const TOKEN_BYTES = 32;

function isLoopback(host: string): boolean {
  return host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * Starts the browser over `store` and resolves once it listens. Binds a loopback address only.
 * @throws TidemarkError INVALID for a host that is not loopback or a bad port; IO when it cannot listen.
 */
export async function startSessionBrowser(options: SessionBrowserOptions): Promise<SessionBrowser> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopback(host)) {
    throw new TidemarkError('INVALID', `ui: host ${JSON.stringify(host)} is not a loopback address`);
  }
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new TidemarkError('INVALID', `ui: port must be an integer from 0 to 65535, got ${port}`);
  }
  const token = randomBytes(TOKEN_BYTES).toString('base64url');
  const context = {
    store: options.store,
    app: loadAppPage(),
    base: `/${token}/`,
    ...(options.presenter !== undefined && { presenter: options.presenter }),
  };
  const tokenDigest = digest(token);
  let boundPort = port;
  const server = createServer((req, res) => {
    const hostHeader = req.headers.host ?? '';
    const hostName = host.includes(':') ? `[${host}]` : host;
    const allowedHosts = [`${hostName}:${boundPort}`, `localhost:${boundPort}`];
    const segments = (req.url ?? '/').split('?')[0]!.split('/');
    const given = segments[1] ?? '';
    // Equal-length digests: the comparison takes the same time whatever the guess.
    const tokenOk = timingSafeEqual(digest(given), tokenDigest);
    if (!tokenOk || !allowedHosts.includes(hostHeader)) {
      send(
        res,
        403,
        'text/plain; charset=utf-8',
        'Forbidden: open the URL with the token that `tidemark ui` printed.\n',
      );
      return;
    }
    handle(req, res, context);
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await listen(server, port, host);
  boundPort = (server.address() as AddressInfo).port;
  const hostName = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${hostName}:${boundPort}/${token}/`,
    port: boundPort,
    close: () => closeServer(server),
  };
}

function handle(
  req: IncomingMessage,
  res: ServerResponse,
  context: Parameters<typeof routeRequest>[2],
): void {
  routeRequest(req, res, context).catch((error: unknown) => {
    if (!res.headersSent) sendErrorJson(res, errorJson(error));
    else res.destroy();
  });
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => {
      const errno = (error as NodeJS.ErrnoException).code;
      reject(
        new TidemarkError('IO', `ui: cannot listen on ${host}:${port}: ${error.message}`, {
          cause: error,
          ...(errno !== undefined && { errno }),
        }),
      );
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
