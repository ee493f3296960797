// `tidemark ui`: the local, read-only session browser of @tidemark/ui over the store.
import { type Context, openMain, print, printJson } from '../context.js';
import { CliError, EXIT_CODES } from '../exit-codes.js';

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
 * printing the URL (with its access token) to open.
 */
export async function runUi(ctx: Context): Promise<number> {
  if (ctx.args.length > 0)
    throw new CliError('USAGE', `ui: unexpected argument ${JSON.stringify(ctx.args[0])}`);
  const port = portOf(ctx.values.port);
  const main = await openMain(ctx);
  const { startSessionBrowser } = await import('@tidemark/ui');
  const browser = await startSessionBrowser({ store: main.store, port });
  if (ctx.values.json) printJson(ctx.io, { url: browser.url });
  else print(ctx.io, `tidemark ui: open ${browser.url}\n(read-only; Ctrl-C to stop)`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await browser.close();
  return EXIT_CODES.OK;
}
