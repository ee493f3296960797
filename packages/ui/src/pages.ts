// The HTML the server sends: the application page (the front end compiled at build time, its
// script and stylesheet inlined and allowed by hash in the Content-Security-Policy), and the error
// page for a refused or failed request. Every string put into HTML goes through escapeHtml.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ErrorJson } from './errors.js';

/** `text` with the five characters that are markup in HTML replaced by their entities. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/** The Content-Security-Policy allowing exactly the inline script and style given. */
export function contentSecurityPolicy(script: string | undefined, style: string): string {
  return [
    "default-src 'none'",
    `script-src ${script === undefined ? "'none'" : sha256(script)}`,
    `style-src ${sha256(style)}`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** A page ready to send: its HTML and the CSP that lets exactly its inline code run. */
export interface Page {
  html: string;
  csp: string;
}

/**
 * Reads the front end built by `build:web` (dist/web/app.js and app.css). The path is the same
 * from src/ and dist/, so tests running the sources use the built front end too.
 */
export function loadAppPage(): Page {
  const dir = new URL('../dist/web/', import.meta.url);
  let script: string;
  let style: string;
  try {
    script = readFileSync(new URL('app.js', dir), 'utf8');
    style = readFileSync(new URL('app.css', dir), 'utf8');
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new Error(`@tidemark/ui: the front end is not built (run its build:web script): ${detail}`);
  }
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><link rel="icon" href="data:,">
<title>tidemark sessions</title><style>${style}</style></head>
<body><main id="app"><p class="muted">Loading…</p></main><script type="module">${script}</script></body></html>`;
  return { html, csp: contentSecurityPolicy(script, style) };
}

const ERROR_STYLE =
  'body{font:15px/1.5 system-ui,sans-serif;margin:3rem auto;max-width:46rem;padding:0 1rem;color:#1f2328}' +
  'h1{font-size:1.4rem}code{background:#f3f4f6;padding:.1rem .3rem;border-radius:4px}.loc{color:#6b7280}';

/** An error page naming the status, the typed error's code and message, and its location. */
export function errorPage(status: number, error: ErrorJson, home: string | undefined): Page {
  const location = error.location;
  const where =
    location === undefined
      ? ''
      : `<p class="loc">at ${escapeHtml(
          [
            location.file,
            location.offset === undefined ? undefined : `offset ${location.offset}`,
            location.table,
            location.row,
            location.seq === undefined ? undefined : `seq ${location.seq}`,
          ]
            .filter((part) => part !== undefined)
            .join(', '),
        )}</p>`;
  const back = home === undefined ? '' : `<p><a href="${escapeHtml(home)}">Back to the session list</a></p>`;
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${status} ${escapeHtml(error.code)}</title>
<style>${ERROR_STYLE}</style></head><body>
<h1>${status} <code>${escapeHtml(error.code)}</code></h1><p>${escapeHtml(error.message)}</p>${where}${back}
</body></html>`;
  return { html, csp: contentSecurityPolicy(undefined, ERROR_STYLE) };
}
