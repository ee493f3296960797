// What every command runs with: the Io, the parsed options, the config file, and the stores it
// opened (closed by `main`), with the helpers that open the main store, its trash and lifecycle.
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { isENOENT, type SessionStore, TidemarkError, toIoError } from '@tidemark/core';
import { AuditLog, type Lifecycle, openLifecycle, readTextIfExists } from '@tidemark/lifecycle';
import { defaultStoreAddress, parseStoreAddress, type StoreAddress, tidemarkHome } from './address.js';
import { type Backend, openBackend } from './backends.js';
import { CliError } from './exit-codes.js';
import { makeStyle, type Style } from './format.js';
import type { Values } from './options.js';

/** Where the CLI reads and writes: the process by default, buffers in tests. */
export interface Io {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  stdin: AsyncIterable<Buffer | string>;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** The config file `$TIDEMARK_HOME/config.json`. */
export interface CliConfig {
  /** Default store address. */
  store?: string;
  /** Trash store address. */
  trash?: string;
}

/** One run of one command. */
export interface Context {
  io: Io;
  values: Values;
  /** The command's positional arguments. */
  args: string[];
  home: string;
  out: Style;
  err: Style;
  config: CliConfig;
  /** Opened stores, closed by main. */
  opened: SessionStore[];
}

/** Writes `text` to stdout as one or more whole lines. */
export function print(io: Io, text: string): void {
  io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** Writes `value` to stdout as indented JSON. */
export function printJson(io: Io, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** The context of a command: `$TIDEMARK_HOME`, its config file and the styles of both outputs. */
export async function makeContext(
  io: Io,
  values: Values,
  args: string[],
  opened: SessionStore[],
): Promise<Context> {
  const home = tidemarkHome(io.env);
  return {
    io,
    values,
    args,
    home,
    out: makeStyle(io.stdout.isTTY === true, io.env),
    err: makeStyle(io.stderr.isTTY === true, io.env),
    config: await readConfig(home),
    opened,
  };
}

async function readConfig(home: string): Promise<CliConfig> {
  const file = join(home, 'config.json');
  const text = await readTextIfExists(file);
  if (text === undefined) return {};
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    const config = value as Record<string, unknown>;
    const out: CliConfig = {};
    if (typeof config.store === 'string') out.store = config.store;
    if (typeof config.trash === 'string') out.trash = config.trash;
    return out;
  } catch (error) {
    throw new TidemarkError('CORRUPT', `${file}: ${error instanceof Error ? error.message : String(error)}`, {
      location: { file },
    });
  }
}

/** The main store: `--store`, else `$TIDEMARK_STORE`, else the config file, else the default. */
export function mainAddress(ctx: Context): StoreAddress {
  return parseStoreAddress(
    ctx.values.store ?? ctx.io.env.TIDEMARK_STORE ?? ctx.config.store ?? defaultStoreAddress(ctx.io.env),
    ctx.io.cwd,
  );
}

/**
 * Opens a store. With `mustExist`, a JSONL directory or SQLite file that is not there is
 * NOT_FOUND instead of being created empty: a mistyped source must not read as "no sessions".
 */
export async function openStore(ctx: Context, address: StoreAddress, mustExist = false): Promise<Backend> {
  if (mustExist && (address.kind === 'jsonl' || address.kind === 'sqlite')) {
    const path = address.kind === 'jsonl' ? address.dir : address.file;
    try {
      await lstat(path);
    } catch (error) {
      if (isENOENT(error)) throw new CliError('NOT_FOUND', `store ${address.text} does not exist`);
      throw toIoError(error, `checking ${address.text}`);
    }
  }
  const backend = await openBackend(address);
  ctx.opened.push(backend.store);
  return backend;
}

/** Opens the main store ({@link mainAddress}). */
export async function openMain(ctx: Context): Promise<Backend> {
  return openStore(ctx, mainAddress(ctx));
}

/** The trash store's address: `--trash`, else the config file, else beside the main store. */
export function trashAddressOf(ctx: Context, main: StoreAddress): StoreAddress {
  return parseStoreAddress(
    ctx.values.trash ?? ctx.config.trash ?? defaultTrashAddress(ctx.home, main),
    ctx.io.cwd,
  );
}

/** The lifecycle of the main store; `moves` for the commands that move sessions in or out of the trash. */
export async function openLifecycleFor(ctx: Context, main: Backend, moves = false): Promise<Lifecycle> {
  const trashText = ctx.values.trash ?? ctx.config.trash ?? defaultTrashAddress(ctx.home, main.address);
  const trashAddress = parseStoreAddress(trashText, ctx.io.cwd);
  // A trash that is the store itself would turn "move to the trash" into destruction (reading,
  // as `verify` of the trash store does, stays allowed).
  if (moves && trashAddress.kind !== 'memory' && trashAddress.text === main.address.text) {
    throw new CliError(
      'USAGE',
      `the trash ${trashAddress.text} is the store itself; pass another one with --trash ADDRESS`,
    );
  }
  const trash = await openStore(ctx, trashAddress);
  return openLifecycle({
    home: ctx.home,
    store: main.store,
    storeAddress: main.address.text,
    trash: trash.store,
    trashAddress: trash.address.text,
  });
}

/** The trash beside the main store, of the same kind: `jsonl:$TIDEMARK_HOME/trash`, `sqlite:$TIDEMARK_HOME/trash.db`. */
export function defaultTrashAddress(home: string, main: StoreAddress): string {
  switch (main.kind) {
    case 'sqlite':
      return `sqlite:${join(home, 'trash.db')}`;
    case 'memory':
      return 'memory:';
    default:
      return `jsonl:${join(home, 'trash')}`;
  }
}

/** The audit log in `$TIDEMARK_HOME`. */
export function auditLog(ctx: Context): AuditLog {
  return new AuditLog(ctx.home);
}
