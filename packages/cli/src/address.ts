// Store addresses: `jsonl:DIR`, `sqlite:FILE`, `memory:`, `postgres://...`. Pure parsing.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { CliError } from './exit-codes.js';

/** A parsed store address. */
export type StoreAddress =
  | { kind: 'jsonl'; dir: string; text: string }
  | { kind: 'sqlite'; file: string; text: string }
  | { kind: 'memory'; text: string }
  | {
      kind: 'postgres';
      /** The connection string for `pg`, without the CLI's own `schema` parameter. */
      url: string;
      /** The `schema` parameter of the address, if any (the store's default otherwise). */
      schema?: string;
      /** The address with user, password and any `password` parameter masked. */
      text: string;
    };

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
  if (address.startsWith('postgres://') || address.startsWith('postgresql://')) return parsePostgres(address);
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

/**
 * A `postgres://` or `postgresql://` URL. The query parameter `schema` is the CLI's (the store's
 * `schema` option), taken out of what `pg` sees; the rest goes to `pg` unchanged. The display
 * form masks the credentials and any `password` parameter, since it is printed and audited.
 */
function parsePostgres(address: string): StoreAddress {
  const query = address.indexOf('?');
  const base = query < 0 ? address : address.slice(0, query);
  const params = query < 0 ? [] : address.slice(query + 1).split('&');
  let schema: string | undefined;
  const kept: string[] = [];
  for (const param of params) {
    const eq = param.indexOf('=');
    const key = eq < 0 ? param : param.slice(0, eq);
    if (key !== 'schema') {
      if (param !== '') kept.push(param);
      continue;
    }
    try {
      schema = decodeURIComponent(eq < 0 ? '' : param.slice(eq + 1));
    } catch {
      schema = '';
    }
    if (schema === '')
      throw new CliError('USAGE', 'the schema parameter of a postgres:// address needs a name');
  }
  const url = kept.length === 0 ? base : `${base}?${kept.join('&')}`;
  const shown = [
    ...kept.map((p) => (/^password=/i.test(p) ? 'password=***' : p)),
    ...(schema !== undefined ? [`schema=${encodeURIComponent(schema)}`] : []),
  ];
  // Up to the last `@` before the query: a password with a raw `/` or `@` is masked whole too.
  const text = `${base.replace(/^(postgres(?:ql)?:\/\/).*@/, '$1***@')}${shown.length === 0 ? '' : `?${shown.join('&')}`}`;
  return { kind: 'postgres', url, ...(schema !== undefined && { schema }), text };
}
