// The tidemark command line. Every command is a function of a Context (parsed arguments and an
// Io) in its own module under commands/; `main` dispatches to it and maps failures to one line on
// stderr and a distinct exit status.
import type { SessionStore } from '@tidemark/core';
import { runActive } from './commands/active.js';
import { runConfig } from './commands/config.js';
import { runDelete } from './commands/delete.js';
import { runExport } from './commands/export.js';
import { runHarness } from './commands/harness.js';
import { runImport } from './commands/import.js';
import { runKeys } from './commands/keys.js';
import { runList } from './commands/list.js';
import { runMigrate } from './commands/migrate.js';
import { runPrune } from './commands/prune.js';
import { runRekey } from './commands/rekey.js';
import { runRepair } from './commands/repair.js';
import { runShow } from './commands/show.js';
import { runTrash } from './commands/trash.js';
import { runUi } from './commands/ui.js';
import { runVerify } from './commands/verify.js';
import { type Context, type Io, makeContext, print } from './context.js';
import { CliError, describeFailure, EXIT_CODES } from './exit-codes.js';
import { makeStyle } from './format.js';
import { commandHelp } from './help.js';
import { parseCommandLine, USAGE } from './options.js';
import { StdoutClosedError } from './terminal.js';

const COMMANDS: Record<string, (ctx: Context) => Promise<number>> = {
  list: runList,
  show: runShow,
  delete: runDelete,
  prune: runPrune,
  trash: runTrash,
  verify: runVerify,
  repair: runRepair,
  export: runExport,
  import: runImport,
  migrate: runMigrate,
  active: runActive,
  config: runConfig,
  ui: runUi,
  rekey: runRekey,
  keys: runKeys,
};

/**
 * Runs the CLI with `argv` (without `node` and the script) and returns the exit status. Expected
 * failures print `tidemark: <CODE>: message` on one line; only unexpected ones print a stack,
 * and only with `TIDEMARK_DEBUG` set.
 */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  const opened: SessionStore[] = [];
  const errStyle = makeStyle(io.stderr.isTTY === true, io.env);
  try {
    return await dispatch(argv, io, opened);
  } catch (error) {
    // The reader of stdout went away (`| head`): it has what it wanted, which is no failure.
    if (error instanceof StdoutClosedError) return EXIT_CODES.OK;
    const { code, message, expected } = describeFailure(error);
    io.stderr.write(`tidemark: ${errStyle.red(code)}: ${message}\n`);
    if (!expected && io.env.TIDEMARK_DEBUG)
      io.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    return EXIT_CODES[code];
  } finally {
    for (const store of opened.reverse()) await store.close().catch(() => undefined);
  }
}

/** Parses `argv` and runs its command; the stores it opens are added to `opened`. */
async function dispatch(argv: readonly string[], io: Io, opened: SessionStore[]): Promise<number> {
  // `harness` passes its own options through untouched to the harness binary.
  if (argv[0] === 'harness') return runHarness(await makeContext(io, {}, [], opened), argv.slice(1));
  const { values, command, args } = parseCommandLine(argv);
  if (values.version) {
    print(io, '0.1.0');
    return EXIT_CODES.OK;
  }
  if (values.help || command === 'help') {
    // `tidemark <command> --help` and `tidemark help <command>`: that command's help.
    const topic = command === 'help' ? args[0] : command;
    if (topic === 'harness') return runHarness(await makeContext(io, {}, [], opened), ['--help']);
    if (topic === undefined) print(io, USAGE);
    else {
      const help = commandHelp(topic);
      if (help === undefined)
        throw new CliError('USAGE', `unknown command ${JSON.stringify(topic)} (tidemark --help)`);
      print(io, help);
    }
    return EXIT_CODES.OK;
  }
  if (command === undefined) {
    io.stderr.write(`${USAGE}\n`);
    return EXIT_CODES.USAGE;
  }
  const run = COMMANDS[command];
  if (run === undefined)
    throw new CliError('USAGE', `unknown command ${JSON.stringify(command)} (tidemark --help)`);
  return run(await makeContext(io, values, args, opened));
}
