// `tidemark keys generate`: a new random key, as the id:base64 entry TIDEMARK_KEYS takes.
import { isTidemarkError } from '@tidemark/core';
import { Keyring } from '@tidemark/sealed';
import { type Context, print, printJson } from '../context.js';
import { CliError, EXIT_CODES } from '../exit-codes.js';

/** The default id of a generated key: `k` and the UTC date and time, `k20261202-113400`. */
function defaultKeyId(now: Date): string {
  const iso = now.toISOString();
  return `k${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}`;
}

/** Runs `tidemark keys generate [--id ID] [--json]`. */
export async function runKeys(ctx: Context): Promise<number> {
  const [sub, extra] = ctx.args;
  if (sub !== 'generate')
    throw new CliError('USAGE', 'keys: the one subcommand is `keys generate [--id ID]`');
  if (extra !== undefined)
    throw new CliError('USAGE', `keys generate: unexpected argument ${JSON.stringify(extra)}`);
  const id = ctx.values.id ?? defaultKeyId(new Date());
  const entry = `${id}:${Keyring.generateKey()}`;
  // Checked as TIDEMARK_KEYS would read it, so that a bad --id fails here and not at first use.
  try {
    Keyring.parse(entry, '--id');
  } catch (error) {
    if (isTidemarkError(error)) throw new CliError('USAGE', error.message);
    throw error;
  }
  if (ctx.values.json) printJson(ctx.io, { id, entry });
  else print(ctx.io, entry);
  return EXIT_CODES.OK;
}
