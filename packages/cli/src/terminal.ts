// What the CLI does for a person at a terminal and stays out of the way of pipes: progress on
// stderr only when stderr is a TTY (never with --json), and a reader that went away (`| head`)
// ends the command quietly.
import type { Context } from './context.js';
import { progressBar } from './format.js';

/**
 * Thrown by stdout's writer once the reader closed the pipe ({@link isReaderGone}): the command stops, and `main`
 * ends it with status 0 and nothing on stderr, as `tidemark export ID | head -1` expects.
 */
export class StdoutClosedError extends Error {
  constructor() {
    super('stdout was closed by its reader');
    this.name = 'StdoutClosedError';
  }
}

/**
 * True when a write to stdout failed because its reader went away: EPIPE on a pipe; ECONNRESET
 * when stdout is a socket (a parent that spawned the CLI with piped stdio holds a socket pair on
 * Linux), and the reader closed its end with output still unread.
 */
export function isReaderGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EPIPE' || code === 'ECONNRESET';
}

/** Whether a command draws progress: stderr is a terminal and the output is not `--json`. */
export function showsProgress(ctx: Context): boolean {
  return ctx.io.stderr.isTTY === true && ctx.values.json !== true;
}

/** A progress bar on stderr, redrawn in place; a no-op when {@link showsProgress} is false. */
export function progressLine(ctx: Context): (done: number, total: number, label: string) => void {
  if (!showsProgress(ctx)) return () => undefined;
  return (done, total, label) => {
    ctx.io.stderr.write(`\r${progressBar(done, total, label)}\u001b[K${done === total ? '\n' : ''}`);
  };
}

const SPINNER = ['|', '/', '-', '\\'];

/**
 * Runs `work` with `label… N s` drawn on stderr while it lasts (for work that cannot count its
 * steps), erased when it ends; on a terminal only, never with `--json`.
 */
export async function withSpinner<T>(ctx: Context, label: string, work: () => Promise<T>): Promise<T> {
  if (!showsProgress(ctx)) return work();
  const started = Date.now();
  let frame = 0;
  const draw = () =>
    ctx.io.stderr.write(
      `\r${SPINNER[frame++ % SPINNER.length]} ${label}… ${((Date.now() - started) / 1000).toFixed(1)} s\u001b[K`,
    );
  draw();
  const timer = setInterval(draw, 200);
  try {
    return await work();
  } finally {
    clearInterval(timer);
    ctx.io.stderr.write('\r\u001b[K');
  }
}
