// The keyring: 32-byte master keys by id, one current. The keys derived from each master key
// (the AES key, and the HMAC key of the synthetic IV as its two padded blocks) are computed once
// per key id and kept in a module-private table, so that neither they nor the master keys are
// reachable from the object.
import { createSecretKey, hkdfSync, type KeyObject, randomBytes } from 'node:crypto';
import { TidemarkError } from '@tidemark/core';

/** The keys of a keyring given in code: `current` names the key that seals, `keys` every key by id. */
export interface KeyringInput {
  /** Id of the key that seals; it must be one of {@link KeyringInput.keys}. */
  current: string;
  /** 32-byte keys by id, as base64 (standard or URL-safe) or bytes. */
  keys: Record<string, string | Uint8Array>;
}

/** A key id: 1 to 64 characters of `[A-Za-z0-9_-]` (no `.`, `:` or `,`, which frame records and lists). */
export const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Bytes of a master key (AES-256). */
export const MASTER_KEY_BYTES = 32;

/** Bytes of a SHA-256 block: an HMAC-SHA256 key is padded to it. */
export const HMAC_BLOCK_BYTES = 64;

/** The keys derived from one master key. */
export interface DerivedKeys {
  /** AES-256-GCM key. */
  readonly enc: KeyObject;
  /**
   * The HMAC-SHA256 key of the synthetic IV, as HMAC's inner pad: the key, zero-padded to a
   * block, XOR 0x36 (RFC 2104). Sealing hashes it with the message in one call.
   */
  readonly ipad: Buffer;
  /**
   * HMAC's outer pad (the padded key XOR 0x5c), followed by room for the inner digest: the whole
   * input of the outer hash. Written by each seal (synchronously, so never by two at once).
   */
  readonly outer: Buffer;
}

const derivedOf = new WeakMap<Keyring, Map<string, DerivedKeys>>();

/**
 * The keys a keyring holds for `id`, derived once (HKDF-SHA256, salt empty, info
 * `tidemark-sealed/1 enc` and `tidemark-sealed/1 iv`). Undefined when the keyring lacks the id.
 * Internal to this package: not exported from its index.
 */
export function derivedKeys(keyring: Keyring, id: string): DerivedKeys | undefined {
  return derivedOf.get(keyring)?.get(id);
}

function derive(master: Uint8Array): DerivedKeys {
  const enc = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), 'tidemark-sealed/1 enc', 32));
  const iv = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), 'tidemark-sealed/1 iv', 32));
  const ipad = Buffer.alloc(HMAC_BLOCK_BYTES);
  const outer = Buffer.alloc(HMAC_BLOCK_BYTES + 32);
  for (let i = 0; i < HMAC_BLOCK_BYTES; i++) {
    const byte = i < iv.length ? iv[i]! : 0;
    ipad[i] = byte ^ 0x36;
    outer[i] = byte ^ 0x5c;
  }
  iv.fill(0);
  return { enc: createSecretKey(enc), ipad, outer };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

function invalid(message: string): TidemarkError {
  return new TidemarkError('INVALID', message);
}

/** Decodes a key given as base64 (standard, padded, or URL-safe unpadded) or bytes; INVALID naming `what`. */
function decodeKey(value: unknown, what: string): Uint8Array {
  let bytes: Uint8Array;
  if (value instanceof Uint8Array) bytes = new Uint8Array(value);
  else if (typeof value === 'string') {
    const text = value.trim();
    if (text === '') throw invalid(`${what}: the key is empty`);
    const url = BASE64URL.test(text) && text.length % 4 !== 1;
    if (!BASE64.test(text) && !url) throw invalid(`${what}: the key is not valid base64`);
    bytes = Buffer.from(text, url && !BASE64.test(text) ? 'base64url' : 'base64');
  } else throw invalid(`${what}: a key must be a base64 string or bytes`);
  if (bytes.length !== MASTER_KEY_BYTES) {
    throw invalid(`${what}: a key must be ${MASTER_KEY_BYTES} bytes after decoding, got ${bytes.length}`);
  }
  return bytes;
}

function assertKeyId(id: unknown, what: string): asserts id is string {
  if (typeof id !== 'string' || !KEY_ID_PATTERN.test(id)) {
    throw invalid(`${what}: a key id must be 1 to 64 characters of [A-Za-z0-9_-], got ${JSON.stringify(id)}`);
  }
}

/**
 * 32-byte AES-256 master keys by id; one is current (it seals), the others only open what they
 * sealed. Immutable once built.
 */
export class Keyring {
  /** Id of the key that seals. */
  readonly currentId: string;
  readonly #ids: readonly string[];

  private constructor(currentId: string, keys: Map<string, Uint8Array>) {
    this.currentId = currentId;
    this.#ids = Object.freeze([...keys.keys()]);
    const derived = new Map<string, DerivedKeys>();
    for (const [id, master] of keys) derived.set(id, derive(master));
    derivedOf.set(this, derived);
  }

  /** A keyring from keys given in code. INVALID naming the bad entry. */
  static from(input: KeyringInput): Keyring {
    if (typeof input !== 'object' || input === null) throw invalid('keyring: expected { current, keys }');
    const { current, keys } = input;
    if (typeof keys !== 'object' || keys === null || Array.isArray(keys))
      throw invalid('keyring: keys must be an object of id → key');
    const entries = Object.entries(keys);
    if (entries.length === 0) throw invalid('keyring: no keys given');
    const map = new Map<string, Uint8Array>();
    for (const [id, key] of entries) {
      assertKeyId(id, `keyring: key ${JSON.stringify(id)}`);
      map.set(id, decodeKey(key, `keyring: key ${JSON.stringify(id)}`));
    }
    assertKeyId(current, 'keyring: current');
    if (!map.has(current))
      throw invalid(`keyring: current key ${JSON.stringify(current)} is not among the keys`);
    return new Keyring(current, map);
  }

  /**
   * Parses the `TIDEMARK_KEYS` format: comma-separated `id:base64` entries (32 bytes after
   * decoding), the FIRST one current. Whitespace around entries is ignored.
   * @param source - named in messages (default `TIDEMARK_KEYS`).
   * @throws TidemarkError INVALID naming the bad entry (by position and id, never the key).
   */
  static parse(text: string, source = 'TIDEMARK_KEYS'): Keyring {
    if (typeof text !== 'string' || text.trim() === '') throw invalid(`${source}: no keys given`);
    const map = new Map<string, Uint8Array>();
    let current: string | undefined;
    const entries = text.split(',');
    entries.forEach((raw, i) => {
      const entry = raw.trim();
      const where = `${source}: entry ${i + 1}`;
      if (entry === '') throw invalid(`${where} is empty`);
      const colon = entry.indexOf(':');
      if (colon === -1) throw invalid(`${where}: expected id:base64-key`);
      const id = entry.slice(0, colon).trim();
      assertKeyId(id, where);
      const named = `${where} (${id})`;
      if (map.has(id)) throw invalid(`${named}: duplicate key id`);
      map.set(id, decodeKey(entry.slice(colon + 1), named));
      current ??= id;
    });
    return new Keyring(current as string, map);
  }

  /** The keyring of `env.TIDEMARK_KEYS`, or undefined when it is unset or blank. */
  static fromEnv(env: NodeJS.ProcessEnv = process.env): Keyring | undefined {
    const text = env.TIDEMARK_KEYS;
    if (text === undefined || text.trim() === '') return undefined;
    return Keyring.parse(text, 'TIDEMARK_KEYS');
  }

  /** A new random key: base64 of 32 bytes from the system's CSPRNG. */
  static generateKey(): string {
    return randomBytes(MASTER_KEY_BYTES).toString('base64');
  }

  /** Every key id, the current one first when built by {@link Keyring.parse}. */
  ids(): string[] {
    return [...this.#ids];
  }

  /** True when the keyring holds a key with this id. */
  has(id: string): boolean {
    return derivedOf.get(this)?.has(id) ?? false;
  }

  /** No key material in logs. */
  toJSON(): { currentId: string; ids: string[] } {
    return { currentId: this.currentId, ids: this.ids() };
  }
}

/** What {@link toKeyring} accepts: a keyring, keys in code, or `TIDEMARK_KEYS` text. */
export type KeysOption = Keyring | KeyringInput | string | undefined;

/** Normalizes the `keys` option of a sealed store. */
export function toKeyring(keys: KeysOption): Keyring | undefined {
  if (keys === undefined) return undefined;
  if (keys instanceof Keyring) return keys;
  if (typeof keys === 'string') return Keyring.parse(keys, 'keys');
  return Keyring.from(keys);
}
