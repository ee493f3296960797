// `tidemark harness`: runs the storage-fault harness of @tidemark/faults with the arguments
// passed through, and passes its exit status back. Package names (`--backends jsonl` is the driver
// `@tidemark/jsonl/harness`, `--driver @acme/store/harness`) are looked up from the working
// directory first, then from this package, which depends on the four first-party backends.
import { spawn } from 'node:child_process';
import { access } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Context } from '../context.js';
import { CliError, EXIT_CODES } from '../exit-codes.js';

/** Runs `tidemark harness [args...]`. */
export async function runHarness(ctx: Context, rawArgs: readonly string[]): Promise<number> {
  let bin: string;
  const require = createRequire(import.meta.url);
  const ownDir = dirname(require.resolve('@tidemark/cli/package.json'));
  try {
    bin = join(dirname(require.resolve('@tidemark/faults/package.json')), 'dist', 'bin.js');
  } catch {
    throw new CliError('UNAVAILABLE', 'the fault harness (@tidemark/faults) is not installed');
  }
  try {
    await access(bin);
  } catch {
    throw new CliError('UNAVAILABLE', `the fault harness is not built (${bin} is missing; run pnpm build)`);
  }
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [bin, ...rawArgs, '--resolve-from', ownDir], {
      stdio: 'inherit',
      env: ctx.io.env,
    });
    child.on('error', (error) =>
      reject(new CliError('UNAVAILABLE', `cannot start the fault harness: ${error.message}`)),
    );
    child.on('exit', (code, signal) =>
      resolvePromise(code ?? (signal !== null ? 128 + 9 : EXIT_CODES.INTERNAL)),
    );
  });
}
