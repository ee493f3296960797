// Store addresses: `jsonl:DIR`, `sqlite:FILE`, `memory:`, `postgres://...`. Pure parsing.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { CliError } from './exit-codes.js';

/** A parsed store address. */
export type StoreAddress =
  | { kind: 'jsonl'; dir: string; text: string }
  | { kind: 'sqlite'; file: string; text: string }
  | { kind: 'memory'; text: string }
  | { kind: 'postgres'; url: string; text: string };

/** `$TIDEMARK_HOME`, default `~/.tidemark`. */
export function tidemarkHome(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.TIDEMARK_HOME;
  return home !== undefined && home !== '' ? resolve(home) : join(homedir(), '.tidemark');
}

/** The default store: `jsonl:$TIDEMARK_HOME/sessions`. */
export function defaultStoreAddress(env: NodeJS.ProcessEnv = process.env): string {
  return `jsonl:${join(tidemarkHome(env), 'sessions')}`;
}

/**
 * Parses a store address. Pure: a leading `~` or `~/` of a path is the user's `home` (not
 * `~user`), other relative paths are resolved against `cwd`. The returned `text` is the canonical
 * form (absolute path), used in the audit log and the config file.
 * @throws CliError USAGE for anything else.
 */
export function parseStoreAddress(
  address: string,
  cwd: string = process.cwd(),
  home: string = homedir(),
): StoreAddress {
  if (address === 'memory:' || address === 'memory') return { kind: 'memory', text: 'memory:' };
  if (address.startsWith('postgres://') || address.startsWith('postgresql://')) {
    return { kind: 'postgres', url: address, text: address.replace(/\/\/[^@/]*@/, '//***@') };
  }
  const colon = address.indexOf(':');
  const scheme = colon < 0 ? '' : address.slice(0, colon);
  const rest = colon < 0 ? '' : address.slice(colon + 1);
  if ((scheme === 'jsonl' || scheme === 'sqlite') && rest !== '') {
    const path =
      rest === '~' || rest.startsWith('~/') ? resolve(home, `.${rest.slice(1)}`) : resolve(cwd, rest);
    return scheme === 'jsonl'
      ? { kind: 'jsonl', dir: path, text: `jsonl:${path}` }
      : { kind: 'sqlite', file: path, text: `sqlite:${path}` };
  }
  throw new CliError(
    'USAGE',
    `${JSON.stringify(address)} is not a store address (use jsonl:DIR, sqlite:FILE, memory: or postgres://...)`,
  );
}
