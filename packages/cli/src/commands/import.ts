// `tidemark import`: a session from an export on stdin, copied into the main store the way
// migrate copies (verified, and a cut-short import continues where it stopped).

import { type SessionStore, TidemarkError } from '@tidemark/core';
import { copySession } from '@tidemark/lifecycle';
import { openMemoryStore } from '@tidemark/memory';
import { isSealedData, isSealedText, type Keyring, openEvents, openSummary } from '@tidemark/sealed';
import type { Backend } from '../backends.js';
import { auditLog, type Context, type Io, openMain, print, printJson } from '../context.js';
import { type ParsedExport, parseExport } from '../exchange.js';
import { CliError, EXIT_CODES } from '../exit-codes.js';
import { commandKeyring, readThrough, summaryIsSealed } from '../keys.js';

/**
 * Runs `tidemark import [--id ID]`. With keys the session is stored sealed under the current key
 * (a sealed export is opened first, with the id it was sealed for). Without keys a sealed export
 * is copied as it is (under its own id only: its records are bound to it), and a plaintext export
 * is refused by a store that holds sealed sessions, never silently stored in clear beside them.
 */
export async function runImport(ctx: Context): Promise<number> {
  if (ctx.args.length > 0)
    throw new CliError('USAGE', 'import reads the export from stdin and takes no arguments');
  const keyring = await commandKeyring(ctx);
  let parsed = parseExport(await readStdinText(ctx.io));
  const id = ctx.values.id ?? parsed.header.meta.id;
  if (parsed.events.length === 0)
    throw new TidemarkError(
      'INVALID',
      'import: the export holds no events (its session was emptied by a tail cut or a repair); a store holds a session only from its first event, so there is nothing to import',
    );
  const sealed = exportSealing(parsed);
  if (sealed === 'mixed')
    throw new TidemarkError(
      'INVALID',
      'import: the export mixes sealed and plaintext values (one kind was slipped in); refusing it',
    );
  if (sealed === 'sealed' && keyring !== undefined) parsed = openExport(parsed, keyring);
  if (sealed === 'sealed' && keyring === undefined && id !== parsed.header.meta.id)
    throw new CliError(
      'USAGE',
      `import: the export is sealed for session ${parsed.header.meta.id}; storing it as ${id} re-seals it, which needs keys (--keys FILE or TIDEMARK_KEYS)`,
    );
  const staging = await stage(parsed, id);
  const stored = await openMain(ctx);
  if (sealed === 'plaintext' && keyring === undefined && (await holdsSealed(stored)))
    throw new TidemarkError(
      'INVALID',
      `import: ${stored.address.text} holds sealed sessions and the export is plaintext: give keys (--keys FILE or TIDEMARK_KEYS) to store it sealed`,
    );
  // With keys, what is written is sealed by the view: a plaintext import never lands in clear.
  const main = readThrough(stored, keyring);
  const result = await copySession(staging, main.store, id);
  const { meta } = parsed.header;
  await auditLog(ctx).record('imported', id, main.address.text, {
    events: result.events,
    hash: result.hash,
    originalId: meta.id,
    originalCreatedAt: meta.createdAt,
  });
  if (ctx.values.json) printJson(ctx.io, result);
  else
    print(
      ctx.io,
      `imported ${id}: ${result.events} events (${result.outcome}), sha256 ${result.hash.slice(0, 16)}…`,
    );
  return EXIT_CODES.OK;
}

/** Whether the values of an export are sealed, plaintext, or a mix of both. Pure. */
function exportSealing(parsed: ParsedExport): 'sealed' | 'plaintext' | 'mixed' {
  const { summary } = parsed.header;
  const kinds = new Set<boolean>();
  if (typeof summary.title === 'string') kinds.add(isSealedText(summary.title));
  if (typeof summary.firstPrompt === 'string') kinds.add(isSealedText(summary.firstPrompt));
  if (summary.attrs !== undefined && summary.attrs !== null) kinds.add(isSealedData(summary.attrs));
  for (const event of parsed.events) kinds.add(isSealedData(event.data));
  if (kinds.size > 1) return 'mixed';
  return kinds.has(true) ? 'sealed' : 'plaintext';
}

/** A sealed export opened with the keyring, for the id it was sealed for (CORRUPT when a value does not open). */
function openExport(parsed: ParsedExport, keyring: Keyring): ParsedExport {
  const { meta, summary } = parsed.header;
  const opened = openSummary(keyring, {
    id: meta.id,
    createdAt: meta.createdAt,
    updatedAt: summary.updatedAt,
    eventCount: parsed.events.length,
    committedSeq: -1,
    interrupted: false,
    ...(summary.title !== undefined && { title: summary.title }),
    ...(summary.firstPrompt !== undefined && { firstPrompt: summary.firstPrompt }),
    ...(summary.attrs !== undefined && { attrs: summary.attrs }),
  });
  const header = {
    ...parsed.header,
    summary: {
      ...summary,
      ...(opened.title !== undefined && { title: opened.title }),
      ...(opened.firstPrompt !== undefined && { firstPrompt: opened.firstPrompt }),
      ...(opened.attrs !== undefined && { attrs: opened.attrs }),
    },
  };
  return { header, events: openEvents(keyring, meta.id, parsed.events) };
}

/** Sessions {@link holdsSealed} looks at: the newest ones, by their summary and first event. */
const SEALED_PROBE = 5;

/**
 * True when the store visibly holds sealed sessions: a sealed summary field among the newest
 * sessions, or a sealed first event. Bounded: one list page and a few one-event reads.
 */
async function holdsSealed(backend: Backend): Promise<boolean> {
  const page = await backend.store.list({ limit: SEALED_PROBE });
  if (page.sessions.some(summaryIsSealed)) return true;
  for (const summary of page.sessions) {
    for await (const event of backend.store.read(summary.id, { toSeq: 0 })) {
      if (isSealedData(event.data)) return true;
    }
  }
  return false;
}

/** All of stdin as text. */
async function readStdinText(io: Io): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  try {
    // Strict: bytes that are not UTF-8 are bad input, never silently stored as U+FFFD.
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new TidemarkError('INVALID', 'import: the input is not valid UTF-8');
  }
}

/** The parsed session in a memory store, from where it is copied like a migration. */
async function stage(parsed: ParsedExport, id: string): Promise<SessionStore> {
  const staging = await openMemoryStore();
  const { meta, summary } = parsed.header;
  await staging.create({
    id,
    // The original creation time, as every other copy keeps it (validated by create).
    ...(meta.createdAt !== undefined && { createdAt: meta.createdAt }),
    ...(meta.cwd !== undefined && { cwd: meta.cwd }),
    ...(meta.parent !== undefined && { parent: meta.parent }),
    ...(summary.title !== undefined && { title: summary.title }),
    ...(summary.tags !== undefined && { tags: summary.tags }),
  });
  await staging.update(id, {
    ...(summary.firstPrompt !== undefined && { firstPrompt: summary.firstPrompt }),
    ...(summary.attrs !== undefined && { attrs: summary.attrs }),
  });
  await staging.append(id, parsed.events);
  return staging;
}
