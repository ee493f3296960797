// Starting a browser over a store for a test, and raw HTTP requests that fetch would normalize
// (dot segments, a foreign Host header).
import { request } from 'node:http';
import type { SessionStore } from '@tidemark/core';
import { type SessionBrowser, startSessionBrowser } from '../src/index.js';

/** A response as a test inspects it. */
export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** GET `path` exactly as written (no normalization), with an optional Host header. */
export function rawGet(
  browser: SessionBrowser,
  path: string,
  options: { host?: string; method?: string } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: browser.port,
        path,
        method: options.method ?? 'GET',
        headers: { host: options.host ?? `127.0.0.1:${browser.port}` },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The `/TOKEN/` path of a browser's URL. */
export function basePath(browser: SessionBrowser): string {
  return new URL(browser.url).pathname;
}

/** Starts a browser over `store` on a free port. */
export function browse(store: SessionStore): Promise<SessionBrowser> {
  return startSessionBrowser({ store, port: 0 });
}
