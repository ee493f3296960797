// `tidemark delete`: moves one session to the trash.
import { type Context, openLifecycleFor, openMain, print, printJson } from '../context.js';
import { EXIT_CODES } from '../exit-codes.js';
import { needId } from '../options.js';
import { absent } from '../sessions.js';

/** Runs `tidemark delete <id>`. */
export async function runDelete(ctx: Context): Promise<number> {
  const id = needId(ctx.args, 'delete');
  const main = await openMain(ctx);
  if (!(await main.store.has(id))) return absent(ctx, main, id);
  const lifecycle = await openLifecycleFor(ctx, main, true);
  const entry = await lifecycle.delete(id);
  if (ctx.values.json) printJson(ctx.io, entry ?? { id, removed: true, empty: true });
  else if (entry === undefined)
    print(
      ctx.io,
      `removed ${id}: it had no events, so there was nothing for the trash to keep (its title and tags are in the audit log)`,
    );
  else
    print(
      ctx.io,
      `moved ${id} to the trash; restorable until ${entry.purgeAfter} (tidemark trash restore ${id})`,
    );
  return EXIT_CODES.OK;
}
