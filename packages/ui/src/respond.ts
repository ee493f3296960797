// Writing responses: every one carries the security headers (no caching, no sniffing, no
// referrer, no framing, a Content-Security-Policy) and nothing that would allow another origin in.
import type { ServerResponse } from 'node:http';
import { type ErrorJson, statusOf } from './errors.js';
import type { Page } from './pages.js';

/** Headers on every response. There is deliberately no Access-Control-* header: no CORS. */
export const BASE_HEADERS: Record<string, string> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/** Writes a complete response with the security headers every response carries. */
export function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  csp = "default-src 'none'; frame-ancestors 'none'",
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, {
    ...BASE_HEADERS,
    'Content-Security-Policy': csp,
    'Content-Type': type,
    'Content-Length': String(Buffer.byteLength(body, 'utf8')),
    ...extra,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/** Sends an HTML page. */
export function sendPage(res: ServerResponse, status: number, page: Page): void {
  send(res, status, 'text/html; charset=utf-8', page.html, page.csp);
}

/** Sends a JSON body. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

/** Sends a typed error as JSON with the status its code calls for. */
export function sendErrorJson(res: ServerResponse, error: ErrorJson): void {
  sendJson(res, statusOf(error.code), { error });
}
