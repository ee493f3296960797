// `tidemark config`: shows or changes `$TIDEMARK_HOME/config.json`.
import { join } from 'node:path';
import { writeFileAtomic } from '@tidemark/lifecycle';
import { parseStoreAddress } from '../address.js';
import { type Context, mainAddress, print, printJson } from '../context.js';
import { EXIT_CODES } from '../exit-codes.js';

/** Runs `tidemark config [--set-store ADDRESS]`. */
export async function runConfig(ctx: Context): Promise<number> {
  const set = ctx.values['set-store'];
  if (set !== undefined) {
    const address = parseStoreAddress(set, ctx.io.cwd);
    // Resolved where it was typed: a relative path kept as is would name another (new, empty)
    // store in every other directory. A postgres URL is kept whole (its text hides the password).
    ctx.config = { ...ctx.config, store: address.kind === 'postgres' ? address.url : address.text };
    await writeFileAtomic(join(ctx.home, 'config.json'), `${JSON.stringify(ctx.config, null, 2)}\n`);
  }
  const effective = { home: ctx.home, store: mainAddress(ctx).text, file: ctx.config };
  if (ctx.values.json) printJson(ctx.io, effective);
  else print(ctx.io, `home  ${effective.home}\nstore ${effective.store}`);
  return EXIT_CODES.OK;
}
