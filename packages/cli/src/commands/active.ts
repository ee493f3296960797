// `tidemark active`: shows or sets the active session of a project directory.
import { type Context, openLifecycleFor, openMain, print, printJson } from '../context.js';
import { EXIT_CODES } from '../exit-codes.js';
import { absent } from '../sessions.js';

/** Runs `tidemark active [<id>] [--cwd DIR]`. */
export async function runActive(ctx: Context): Promise<number> {
  const main = await openMain(ctx);
  const lifecycle = await openLifecycleFor(ctx, main);
  const cwd = ctx.values.cwd ?? ctx.io.cwd;
  const id = ctx.args[0];
  if (id !== undefined) {
    if (!(await main.store.has(id))) return absent(ctx, main, id);
    await lifecycle.setActive(cwd, id);
  }
  const active = await lifecycle.getActive(cwd);
  if (ctx.values.json) printJson(ctx.io, { cwd, active: active ?? null });
  else
    print(ctx.io, active === undefined ? `no active session for ${cwd}` : `${active}  (active for ${cwd})`);
  return EXIT_CODES.OK;
}
