/** Parsed command line of the harness entry. */
export interface HarnessArgs {
  quick: boolean;
  backends: string[];
  out: string;
  kills?: number;
  /** A replay id from the report: run that one run again instead of the harness. */
  replay?: string;
  /** Print the report as JSON on stdout instead of the table. */
  json?: boolean;
}

/** Parses argv (without node and script). Pure. */
export function parseHarnessArgs(argv: readonly string[]): HarnessArgs {
  const args: HarnessArgs = { quick: false, backends: ['memory', 'jsonl', 'sqlite', 'postgres'], out: '.' };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === '--quick') args.quick = true;
    else if (arg === '--backends') args.backends = value().split(',').filter(Boolean);
    else if (arg.startsWith('--backends=')) args.backends = arg.slice(11).split(',').filter(Boolean);
    else if (arg === '--out') args.out = value();
    else if (arg.startsWith('--out=')) args.out = arg.slice(6);
    else if (arg === '--kills') args.kills = Number(value());
    else if (arg === '--json') args.json = true;
    else if (arg === '--replay') args.replay = value();
    else if (arg.startsWith('--replay=')) args.replay = arg.slice(9);
    else
      throw new Error(
        `unknown argument ${arg} (use --quick, --backends memory,jsonl,sqlite,postgres, --out DIR, --kills N, --replay ID, --json)`,
      );
  }
  return args;
}
