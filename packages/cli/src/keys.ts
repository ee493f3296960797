// Keys for sealed stores: where the CLI takes them from (`--keys FILE`, else `TIDEMARK_KEYS`), the
// store a command reads through (a sealed view when there are keys), and how values that stay
// sealed are shown without keys ("sealed" in their place).
import { readFile } from 'node:fs/promises';
import {
  isENOENT,
  isTidemarkError,
  type JsonValue,
  type SessionEvent,
  type SessionStore,
  type SessionSummary,
  TidemarkError,
  toIoError,
} from '@tidemark/core';
import {
  isSealedData,
  isSealedText,
  Keyring,
  openBatchOf,
  openSummary,
  SealedEventOpener,
  sealedKeyId,
  sealStore,
} from '@tidemark/sealed';
import type { Backend } from './backends.js';
import type { Context } from './context.js';
import { CliError } from './exit-codes.js';

/** What a sealed value is shown as when there are no keys to open it. */
export const SEALED_MARK = 'sealed';

/**
 * The text of a keys file as `TIDEMARK_KEYS` takes it: entries separated by commas or newlines,
 * blank lines and `#` comments ignored. Pure.
 */
export function keysFileText(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '')
    .join(',');
}

/**
 * The keyring of the command: `--keys FILE` (the first entry is current), else `TIDEMARK_KEYS`,
 * else undefined.
 * @throws CliError NOT_FOUND for a keys file that is not there; TidemarkError INVALID naming the
 *   file or variable and the bad entry; IO when the file cannot be read.
 */
export async function commandKeyring(ctx: Context): Promise<Keyring | undefined> {
  const file = ctx.values.keys;
  if (file === undefined) return Keyring.fromEnv(ctx.io.env);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (isENOENT(error)) throw new CliError('NOT_FOUND', `keys file ${file} does not exist`);
    throw toIoError(error, `reading the keys file ${file}`);
  }
  return Keyring.parse(keysFileText(text), `keys file ${file}`);
}

/** The keyring, or USAGE saying that `what` needs one. */
export async function requireKeyring(ctx: Context, what: string): Promise<Keyring> {
  const keyring = await commandKeyring(ctx);
  if (keyring === undefined)
    throw new CliError(
      'USAGE',
      `${what} needs keys: --keys FILE or TIDEMARK_KEYS (id:base64, the first current)`,
    );
  return keyring;
}

/**
 * The backend as a command reads it: through a sealed view that opens (and seals) with the
 * keyring when there is one, else as stored.
 */
export function readThrough(backend: Backend, keyring: Keyring | undefined): ReadBackend {
  if (keyring === undefined) return backend;
  // Closing the view would close the inner store, which main closes already.
  return { address: backend.address, store: sealStore(backend.store, { keys: keyring }) };
}

/** A store as a command reads it: the store as opened, or a sealed view of it. */
export interface ReadBackend {
  address: Backend['address'];
  store: SessionStore;
}

/** True when any value of the summary is sealed. */
export function summaryIsSealed(summary: SessionSummary): boolean {
  return (
    (summary.title !== undefined && isSealedText(summary.title)) ||
    (summary.firstPrompt !== undefined && isSealedText(summary.firstPrompt)) ||
    (summary.attrs !== undefined && isSealedData(summary.attrs))
  );
}

/** The summary with "sealed" in place of each sealed value. Pure. */
export function maskSummary(summary: SessionSummary): SessionSummary {
  if (!summaryIsSealed(summary)) return summary;
  const out: SessionSummary = { ...summary };
  if (out.title !== undefined && isSealedText(out.title)) out.title = SEALED_MARK;
  if (out.firstPrompt !== undefined && isSealedText(out.firstPrompt)) out.firstPrompt = SEALED_MARK;
  if (out.attrs !== undefined && isSealedData(out.attrs)) out.attrs = { [SEALED_MARK]: SEALED_MARK };
  return out;
}

/** The event with "sealed" as its data when its data is sealed. Pure. */
export function maskEvent(event: SessionEvent): SessionEvent {
  return isSealedData(event.data) ? { ...event, data: SEALED_MARK } : event;
}

/** The key ids the sealed values of a session (summary and events) name, sorted. Pure. */
export function sealedKeyIds(summary: SessionSummary | undefined, events: readonly SessionEvent[]): string[] {
  const ids = new Set<string>();
  const note = (value: JsonValue | string | undefined) => {
    const id = value === undefined ? undefined : sealedKeyId(value);
    if (id !== undefined) ids.add(id);
  };
  note(summary?.title);
  note(summary?.firstPrompt);
  note(summary?.attrs);
  for (const event of events) note(event.data);
  return [...ids].sort();
}

/**
 * A read-only view of `inner` that opens every sealed value with `keyring` and passes plaintext
 * through as it is: the source of `migrate --seal`, which seals a whole store whatever mix of
 * sealed and plaintext sessions it holds. A session whose events mix sealed and plaintext records
 * is CORRUPT (one of them was slipped in). Writes reject with INVALID.
 */
export function openingView(inner: SessionStore, keyring: Keyring): SessionStore {
  const openSummaryIfSealed = (summary: SessionSummary): SessionSummary =>
    summaryIsSealed(summary) ? openSummary(keyring, summary) : summary;
  const readOnly = (what: string) => () =>
    Promise.reject(new TidemarkError('INVALID', `${what}: this view of the store is read-only`));
  return {
    create: readOnly('create'),
    append: readOnly('append'),
    update: readOnly('update'),
    delete: readOnly('delete'),
    has: (id) => inner.has(id),
    close: () => Promise.resolve(),
    async list(query) {
      const page = await inner.list(query);
      const sessions: SessionSummary[] = [];
      const problems = [...page.problems];
      for (const summary of page.sessions) {
        try {
          sessions.push(openSummaryIfSealed(summary));
        } catch (error) {
          if (!isTidemarkError(error)) throw error;
          problems.push({ id: summary.id, error });
        }
      }
      return { ...page, sessions, problems };
    },
    async load(id, options) {
      const loaded = await inner.load(id, options);
      const events = openEvents(keyring, id, loaded.events);
      return { ...loaded, summary: openSummaryIfSealed(loaded.summary), events };
    },
    read(id, range) {
      return (async function* () {
        let sealed: boolean | undefined;
        const opener = new SealedEventOpener(keyring, id);
        for await (const event of inner.read(id, range)) {
          const isSealed = isSealedData(event.data);
          if (sealed === undefined) {
            sealed = isSealed;
            // A range that starts inside a batch sealed as one: its first record opens it.
            if (isSealed) await openBatchOf(inner, opener, id, event);
          }
          if (isSealed !== sealed) throw mixed(id, event.seq);
          yield isSealed ? opener.open(event) : event;
        }
      })();
    },
  };
}

function mixed(id: string, seq: number): TidemarkError {
  return new TidemarkError(
    'CORRUPT',
    `session ${id} seq ${seq}: the session mixes sealed and plaintext records (one kind was slipped in)`,
    { sessionId: id, location: { seq } },
  );
}

/** The events of a whole session (from seq 0) opened, or passed through when they are plaintext. */
function openEvents(keyring: Keyring, id: string, events: readonly SessionEvent[]): SessionEvent[] {
  const first = events[0];
  const sealed = first !== undefined && isSealedData(first.data);
  const opener = new SealedEventOpener(keyring, id);
  return events.map((event) => {
    if (isSealedData(event.data) !== sealed) throw mixed(id, event.seq);
    return sealed ? opener.open(event) : event;
  });
}
