import { parseArgs } from 'node:util';
import { FIRST_PARTY_BACKENDS } from './drivers/first-party.js';

/** Parsed command line of the harness entry. */
export interface HarnessArgs {
  quick: boolean;
  /** First-party backends by name (`@tidemark/<name>/harness`); default all four when no `--driver` is given. */
  backends: string[];
  /** Driver modules by path or package name (`--driver`, repeatable), after the backends. */
  drivers: string[];
  out: string;
  kills?: number;
  /** Stop the sweeps once this many violations were found (`--stop-after`): a fail-fast run. */
  stopAfter?: number;
  /** A replay id from the report: run that one run again instead of the harness. */
  replay?: string;
  /** Print the report as JSON on stdout instead of the table. */
  json?: boolean;
  /** Print the usage and exit 0. */
  help?: boolean;
  /** More directories package names are looked up from, after the working directory. */
  resolveFrom: string[];
}

/** The usage text of `tidemark harness --help`: every flag. */
export const HARNESS_USAGE = `Usage: tidemark harness [options]

Puts backends through the storage-fault harness (@tidemark/faults): error sweeps, crash sweeps,
real faults. Writes harness-report.{json,md,html}; exit status 0 when every cell passed, 1 when a
cell failed (or a replayed run still violates), 2 on a usage or setup error.

Options:
  --backends LIST      first-party backends, comma-separated: ${FIRST_PARTY_BACKENDS.join(',')}
                       (each is the driver module @tidemark/NAME/harness; default: all four,
                       unless --driver is given)
  --driver MODULE      a harness driver module by path (./harness-driver.js) or package name
                       (@acme/store/harness); its default export is a HarnessDriver or a function
                       returning one. Repeatable; runs after --backends
  --quick              CI-sized run (fewer faults, crash points and kills)
  --out DIR            where the report files go (default: .)
  --kills N            SIGKILLs per backend (default 200, quick 20)
  --stop-after N       stop sweeping once N violations were found (fail fast; the report then
                       covers only what ran before)
  --replay ID          run one reported run again (needs exactly one backend or driver, and the
                       same --quick as the report); prints its outcome
  --json               the report, or the replayed outcome, as JSON on stdout
  --resolve-from DIR   also look package names up from DIR (repeatable; the working directory
                       comes first)
  -h, --help           this text

Environment: TIDEMARK_PG_URL (the PostgreSQL cells' server), TIDEMARK_HARNESS_TRACE=1 (print
every typed error the workload meets), CI=true (cells that cannot run fail instead of n/a).
`;

function positiveWhole(text: string, flag: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < 0)
    throw new Error(`${flag} must be a whole number (got ${text})`);
  return n;
}

function atLeastOne(text: string, flag: string): number {
  const n = positiveWhole(text, flag);
  if (n === 0) throw new Error(`${flag} must be at least 1 (got ${text})`);
  return n;
}

/** Parses argv (without node and script). Pure. */
export function parseHarnessArgs(argv: readonly string[]): HarnessArgs {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new Error(`${(error as Error).message.split('\n')[0]} (see --help)`);
  }
  const { values, positionals } = parsed;
  if (positionals.length > 0) throw new Error(`unexpected argument ${positionals[0]} (see --help)`);
  const drivers = values.driver ?? [];
  const split = (list: string) => list.split(',').filter(Boolean);
  const backends =
    values.backends !== undefined
      ? split(values.backends)
      : drivers.length > 0
        ? []
        : [...FIRST_PARTY_BACKENDS];
  return {
    quick: values.quick ?? false,
    backends,
    drivers,
    out: values.out ?? '.',
    resolveFrom: values['resolve-from'] ?? [],
    ...(values.kills !== undefined && { kills: positiveWhole(values.kills, '--kills') }),
    ...(values['stop-after'] !== undefined && {
      stopAfter: atLeastOne(values['stop-after'], '--stop-after'),
    }),
    ...(values.replay !== undefined && { replay: values.replay }),
    ...(values.json === true && { json: true }),
    ...(values.help === true && { help: true }),
  };
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      quick: { type: 'boolean' },
      backends: { type: 'string' },
      driver: { type: 'string', multiple: true },
      out: { type: 'string' },
      kills: { type: 'string' },
      'stop-after': { type: 'string' },
      replay: { type: 'string' },
      json: { type: 'boolean' },
      'resolve-from': { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  });
}
