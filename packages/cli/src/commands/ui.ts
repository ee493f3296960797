// `tidemark ui`: the local, read-only session browser of @tidemark/ui over the store.
import { type Context, openMain, print, printJson } from '../context.js';
import { CliError, EXIT_CODES } from '../exit-codes.js';
import { commandKeyring, maskEvent, maskSummary, readThrough } from '../keys.js';

/** A TCP port from 0 (any free port) to 65535. */
function portOf(text: string | undefined): number {
  if (text === undefined) return 0;
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < 0 || n > 65535)
    throw new CliError('USAGE', `--port must be a port number from 0 to 65535, got ${JSON.stringify(text)}`);
  return n;
}

/**
 * Runs `tidemark ui [--port N] [--json]`: serves the browser on 127.0.0.1 until SIGINT or SIGTERM,
 * printing the URL (with its access token) to open. Keys as for `show`.
 */
export async function runUi(ctx: Context): Promise<number> {
  if (ctx.args.length > 0)
    throw new CliError('USAGE', `ui: unexpected argument ${JSON.stringify(ctx.args[0])}`);
  const port = portOf(ctx.values.port);
  const keyring = await commandKeyring(ctx);
  const main = readThrough(await openMain(ctx), keyring);
  const { startSessionBrowser } = await import('@tidemark/ui');
  // With keys the browser reads through a sealed view and shows plaintext; without, each sealed
  // value is shown as "sealed" (its export still streams the records as stored).
  const browser = await startSessionBrowser({
    store: main.store,
    port,
    ...(keyring === undefined && { presenter: { summary: maskSummary, event: maskEvent } }),
  });
  if (ctx.values.json) printJson(ctx.io, { url: browser.url });
  else print(ctx.io, `tidemark ui: open ${browser.url}\n(read-only; Ctrl-C to stop)`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await browser.close();
  return EXIT_CODES.OK;
}
