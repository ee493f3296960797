// The command line's options, shared by every command: one table for `parseArgs`, the usage text,
// and the parsers of option values, so that each command reads `ctx.values` already checked.
import { parseArgs } from 'node:util';
import { CliError } from './exit-codes.js';

/** The text of `tidemark --help`. */
export const USAGE = `Usage: tidemark [--store ADDRESS] <command> [options]

Commands:
  list [--cwd DIR] [--limit N] [--json]       sessions, newest first
  show <id> [--json]                          a readable timeline of one session ("sealed" without keys)
  delete <id>                                 move a session to the trash
  prune [--older-than DAYS] [--yes] [--json]  preview (default) or move old sessions to the trash
  trash list|restore <id>|purge [--dry-run]   the trash (purge only after the grace period)
  verify [<id> | --all] [--json]              check logs read-only; exit 1 when damage is found
  repair <id> [--cut-tail] [--drop-corrupt]   quarantine torn bytes (and the interrupted tail, a corrupt end)
  export <id> [--decrypt]                     JSONL on stdout: a header line, then the events (as stored)
  import [--id ID]                            JSONL from stdin, as written by export (sealed with keys)
  migrate --from ADDRESS --to ADDRESS [--json] copy every session, verified and resumable
          [--seal | --unseal]                 ... sealing or unsealing every session on the way
  rekey [--staging ADDRESS] [--json]          re-seal every session under the current key, resumable
  keys generate [--id ID]                     print a new key entry (id:base64) for TIDEMARK_KEYS
  active [<id>] [--cwd DIR]                   show or set the active session of a project
  config [--set-store ADDRESS]                show or change $TIDEMARK_HOME/config.json
  harness [args...]                           run the storage-fault harness (@tidemark/faults)
  ui [--port N] [--json]                      a local read-only session browser (prints its URL)

\`tidemark <command> --help\` (or \`tidemark help <command>\`) lists every option of a command.
--json prints data as JSON on every command that prints data (export writes JSONL already).
Progress goes to stderr only on a terminal, never with --json. NO_COLOR turns colour off.

Stores: jsonl:DIR, sqlite:FILE, memory:, postgres://... (default jsonl:$TIDEMARK_HOME/sessions)
Keys of sealed stores: --keys FILE, else TIDEMARK_KEYS (comma-separated id:base64, the first current)
Exit codes: 0 ok, 1 problems found, 2 usage, 3 NOT_FOUND, 4 ALREADY_EXISTS, 5 CONFLICT,
  6 INVALID, 7 CORRUPT, 8 UNSUPPORTED_FORMAT, 9 IO, 10 CLOSED, 11 AUDITED_MISSING,
  12 UNAVAILABLE, 70 internal error`;

/** Every option of every command; `parseArgs` rejects any other. */
const OPTIONS = {
  store: { type: 'string' },
  trash: { type: 'string' },
  json: { type: 'boolean' },
  cwd: { type: 'string' },
  limit: { type: 'string' },
  all: { type: 'boolean' },
  yes: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  'older-than': { type: 'string' },
  'cut-tail': { type: 'boolean' },
  'drop-corrupt': { type: 'boolean' },
  from: { type: 'string' },
  to: { type: 'string' },
  id: { type: 'string' },
  'set-store': { type: 'string' },
  port: { type: 'string' },
  keys: { type: 'string' },
  staging: { type: 'string' },
  decrypt: { type: 'boolean' },
  seal: { type: 'boolean' },
  unseal: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

/** The parsed option values. */
export type Values = {
  [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'string' ? string : boolean;
};

/** A parsed command line: the options, the command name and its positional arguments. */
export interface CommandLine {
  values: Values;
  command: string | undefined;
  args: string[];
}

/** Parses `argv`; an unknown option or a missing value is USAGE on one line. */
export function parseCommandLine(argv: readonly string[]): CommandLine {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new CliError(
      'USAGE',
      `${error instanceof Error ? error.message : String(error)} (tidemark --help)`,
    );
  }
  const [command, ...args] = parsed.positionals;
  return { values: parsed.values as Values, command, args };
}

/** The one session id of a command that takes exactly one. */
export function needId(args: readonly string[], what: string): string {
  const id = args[0];
  if (id === undefined) throw new CliError('USAGE', `${what} needs a session id`);
  if (args.length > 1) throw new CliError('USAGE', `${what}: unexpected argument ${JSON.stringify(args[1])}`);
  return id;
}

/**
 * Largest number of days an option accepts (about 2700 years): far more, and the cutoff date of
 * `prune --older-than` falls outside what a Date can hold.
 */
const MAX_DAYS = 1_000_000;

/** A number of days from 0 to {@link MAX_DAYS} (an empty text is not 0). */
export function days(text: string | undefined, name: string, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new CliError('USAGE', `${name} must be a non-negative number of days, got ${JSON.stringify(text)}`);
  if (n > MAX_DAYS)
    throw new CliError('USAGE', `${name} must be at most ${MAX_DAYS} days, got ${JSON.stringify(text)}`);
  return n;
}

/** A whole number from 1 (an empty text is not a number). */
export function positiveInteger(text: string, name: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < 1)
    throw new CliError('USAGE', `${name} must be a positive integer, got ${JSON.stringify(text)}`);
  return n;
}
