// `tidemark import`: a session from an export on stdin, copied into the main store the way
// migrate copies (verified, and a cut-short import continues where it stopped).
import { type SessionStore, TidemarkError } from '@tidemark/core';
import { copySession } from '@tidemark/lifecycle';
import { openMemoryStore } from '@tidemark/memory';
import { auditLog, type Context, type Io, openMain, print, printJson } from '../context.js';
import { type ParsedExport, parseExport } from '../exchange.js';
import { CliError, EXIT_CODES } from '../exit-codes.js';

/** Runs `tidemark import [--id ID]`. */
export async function runImport(ctx: Context): Promise<number> {
  if (ctx.args.length > 0)
    throw new CliError('USAGE', 'import reads the export from stdin and takes no arguments');
  const parsed = parseExport(await readStdinText(ctx.io));
  const id = ctx.values.id ?? parsed.header.meta.id;
  if (parsed.events.length === 0)
    throw new TidemarkError(
      'INVALID',
      'import: the export holds no events (its session was emptied by a tail cut or a repair); a store holds a session only from its first event, so there is nothing to import',
    );
  const staging = await stage(parsed, id);
  const main = await openMain(ctx);
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
