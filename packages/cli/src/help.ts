// `tidemark <command> --help`: one entry per command with its synopsis and every flag it takes,
// so that the help of a command is printed from the same table whatever command it is. The
// flags are named by their key in the option table (options.ts), so a renamed option fails to
// compile here instead of leaving a stale help text behind.
import type { Values } from './options.js';

type Flag = keyof Values;

/** The help of one command. */
export interface CommandHelp {
  /** What follows `tidemark` in the usage line. */
  usage: string;
  /** One or two sentences. */
  summary: string;
  /** The command's own flags, each with its value name (if any) and what it does. */
  flags: ReadonlyArray<readonly [flag: Flag, value: string | undefined, description: string]>;
  /** Whether the command opens the main store (then `--store` applies). */
  store: boolean;
  /** Whether it may look into the trash (then `--trash` applies). */
  trash: boolean;
}

const JSON_FLAG = ['json', undefined, 'print the result as JSON'] as const;
const KEYS_FLAG = [
  'keys',
  'FILE',
  'keys of a sealed store, one id:base64 a line, the first current (default: TIDEMARK_KEYS)',
] as const;

/** Every command but `harness`, whose options are the fault harness's own (`tidemark harness --help`). */
export const COMMAND_HELP: Readonly<Record<string, CommandHelp>> = {
  list: {
    usage: 'list [--cwd DIR] [--limit N] [--json]',
    summary:
      'Sessions, newest first. Sessions the store cannot read are problems on stderr (exit 1). A sealed title shows as "sealed" without keys.',
    flags: [
      ['cwd', 'DIR', 'only the sessions of this working directory'],
      ['limit', 'N', 'at most N sessions (a positive integer; default all)'],
      KEYS_FLAG,
      JSON_FLAG,
    ],
    store: true,
    trash: false,
  },
  show: {
    usage: 'show <id> [--json]',
    summary:
      'A readable timeline of one session: every event, the commit state and the summary. With keys, sealed values are opened; without, each shows as "sealed".',
    flags: [KEYS_FLAG, JSON_FLAG],
    store: true,
    trash: true,
  },
  delete: {
    usage: 'delete <id> [--json]',
    summary: 'Moves a session to the trash (restore it with `tidemark trash restore <id>`).',
    flags: [JSON_FLAG],
    store: true,
    trash: true,
  },
  prune: {
    usage: 'prune [--older-than DAYS] [--yes] [--json]',
    summary: 'Lists the sessions not updated for DAYS (a preview), or moves them to the trash with --yes.',
    flags: [
      ['older-than', 'DAYS', 'days since the last update (default 30)'],
      ['yes', undefined, 'apply: move the sessions to the trash'],
      JSON_FLAG,
    ],
    store: true,
    trash: true,
  },
  trash: {
    usage: 'trash [list | restore <id> | purge [--dry-run]] [--json]',
    summary: 'The trash: list it (the default), restore a session, or purge what is past its grace period.',
    flags: [['dry-run', undefined, 'purge: print what would be destroyed, destroy nothing'], JSON_FLAG],
    store: true,
    trash: true,
  },
  verify: {
    usage: 'verify [<id> | --all] [--json]',
    summary: 'Checks one session or the whole store, read-only; exit 1 when damage is found.',
    flags: [['all', undefined, 'every session of the store (the default without an id)'], JSON_FLAG],
    store: true,
    trash: true,
  },
  repair: {
    usage: 'repair <id> [--cut-tail] [--drop-corrupt] [--json]',
    summary: 'Moves torn bytes to quarantine; with the flags, also the interrupted tail or a corrupt end.',
    flags: [
      ['cut-tail', undefined, 'also quarantine the interrupted turn (events after the last boundary)'],
      ['drop-corrupt', undefined, 'also quarantine a corrupt log from its first damaged point'],
      JSON_FLAG,
    ],
    store: true,
    trash: true,
  },
  export: {
    usage: 'export <id> [--decrypt]',
    summary:
      'Writes the session as JSONL on stdout: a header line, then one event per line, as stored (a sealed session stays sealed). --decrypt writes the plaintext instead.',
    flags: [
      ['decrypt', undefined, 'open every sealed value (needs keys): the output is plaintext'],
      KEYS_FLAG,
    ],
    store: true,
    trash: true,
  },
  import: {
    usage: 'import [--id ID] [--json] < session.jsonl',
    summary:
      'Reads a session from stdin, as `tidemark export` wrote it, into the store. With keys it is stored sealed; without, a plaintext session is refused by a store that holds sealed sessions.',
    flags: [['id', 'ID', 'store it under this id instead of the one in the header'], KEYS_FLAG, JSON_FLAG],
    store: true,
    trash: false,
  },
  migrate: {
    usage: 'migrate --from ADDRESS --to ADDRESS [--seal | --unseal] [--json]',
    summary:
      'Copies every session from one store to another, each verified; a rerun resumes. Records are copied as stored (sealed stays sealed) unless --seal or --unseal is given.',
    flags: [
      ['from', 'ADDRESS', 'the store to copy from (read only)'],
      ['to', 'ADDRESS', 'the store to copy into'],
      ['seal', undefined, 'store every session sealed under the current key (plaintext and sealed sources)'],
      ['unseal', undefined, 'store every session as plaintext (the source must be sealed)'],
      KEYS_FLAG,
      JSON_FLAG,
    ],
    store: false,
    trash: false,
  },
  rekey: {
    usage: 'rekey [--staging ADDRESS] [--keys FILE] [--json]',
    summary:
      'Re-seals every session of the store under the current key (the first of the keys), each all or nothing, through a staging store; after a crash or a kill, run it again and it finishes. Exit 1 when sessions are left to do. Run it while no agent writes the store. Keys that sessions in the trash use are not retirable.',
    flags: [
      [
        'staging',
        'ADDRESS',
        'the store for copies in flight (default jsonl:$TIDEMARK_HOME/rekey-staging/<store hash>); keep it until a run completes',
      ],
      KEYS_FLAG,
      JSON_FLAG,
    ],
    store: true,
    trash: true,
  },
  keys: {
    usage: 'keys generate [--id ID] [--json]',
    summary:
      'Prints a new random 32-byte key as an id:base64 entry. Put it FIRST in TIDEMARK_KEYS (or the keys file) to make it current, keep the old keys after it, then run `tidemark rekey`.',
    flags: [['id', 'ID', 'the key id (default k<UTC date and time>)'], JSON_FLAG],
    store: false,
    trash: false,
  },
  active: {
    usage: 'active [<id>] [--cwd DIR] [--json]',
    summary: 'Shows the active session of a project, or sets it to <id>.',
    flags: [['cwd', 'DIR', 'the project directory (default: the current directory)'], JSON_FLAG],
    store: true,
    trash: true,
  },
  config: {
    usage: 'config [--set-store ADDRESS] [--json]',
    summary: 'Shows $TIDEMARK_HOME/config.json and the store in use, or sets the default store.',
    flags: [['set-store', 'ADDRESS', 'save ADDRESS as the default store'], JSON_FLAG],
    store: true,
    trash: false,
  },
  ui: {
    usage: 'ui [--port N] [--json]',
    summary:
      'Serves a local, read-only session browser on 127.0.0.1 and prints its URL; Ctrl-C stops it. With keys it opens sealed values; without, each shows as "sealed".',
    flags: [
      ['port', 'N', 'the TCP port (default 0: any free port)'],
      KEYS_FLAG,
      ['json', undefined, 'print the URL as JSON'],
    ],
    store: true,
    trash: false,
  },
};

/** The text of `tidemark <command> --help`, or undefined for a command without an entry. */
export function commandHelp(command: string): string | undefined {
  const help = COMMAND_HELP[command];
  if (help === undefined) return undefined;
  const rows: Array<[string, string]> = help.flags.map(([flag, value, description]) => [
    `--${flag}${value === undefined ? '' : ` ${value}`}`,
    description,
  ]);
  if (help.store)
    rows.push([
      '--store ADDRESS',
      'the store: jsonl:DIR, sqlite:FILE, memory:, postgres://... (see tidemark --help)',
    ]);
  if (help.trash) rows.push(['--trash ADDRESS', 'the trash store (default: beside the main store)']);
  rows.push(['-h, --help', 'print this help']);
  const width = Math.max(...rows.map(([left]) => left.length)) + 2;
  return [
    `Usage: tidemark ${help.usage}`,
    '',
    help.summary,
    '',
    'Options:',
    ...rows.map(([left, right]) => `  ${left.padEnd(width)}${right}`),
  ].join('\n');
}
