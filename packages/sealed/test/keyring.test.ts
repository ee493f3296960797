import { TidemarkError } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { Keyring } from '../src/index.js';
import { K1, K2 } from './helpers.js';

function invalid(fn: () => unknown): TidemarkError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(TidemarkError);
    expect((error as TidemarkError).code).toBe('INVALID');
    return error as TidemarkError;
  }
  throw new Error('expected INVALID');
}

describe('TIDEMARK_KEYS parsing', () => {
  it('takes the first key as current and keeps the others for opening', () => {
    const ring = Keyring.parse(` new:${K2} , old:${K1}`);
    expect(ring.currentId).toBe('new');
    expect(ring.ids()).toEqual(['new', 'old']);
    expect(ring.has('old')).toBe(true);
    expect(ring.has('gone')).toBe(false);
    expect(JSON.stringify(ring)).not.toContain(K1);
  });

  it('accepts URL-safe base64 and generated keys', () => {
    const url = Buffer.alloc(32, 0xfb).toString('base64url');
    expect(Keyring.parse(`a:${url}`).currentId).toBe('a');
    expect(Keyring.parse(`g:${Keyring.generateKey()}`).ids()).toEqual(['g']);
  });

  it('names the bad entry: bad base64, wrong length, duplicate id, empty, bad id', () => {
    expect(invalid(() => Keyring.parse(`a:${K1},b:not*base64`)).message).toMatch(
      /entry 2 \(b\).*not valid base64/,
    );
    expect(invalid(() => Keyring.parse(`a:${Buffer.alloc(16).toString('base64')}`)).message).toMatch(
      /entry 1 \(a\).*32 bytes.*got 16/,
    );
    expect(invalid(() => Keyring.parse(`a:${K1},a:${K2}`)).message).toMatch(
      /entry 2 \(a\): duplicate key id/,
    );
    expect(invalid(() => Keyring.parse('')).message).toMatch(/no keys/);
    expect(invalid(() => Keyring.parse(`a:${K1},,b:${K2}`)).message).toMatch(/entry 2 is empty/);
    expect(invalid(() => Keyring.parse('a:')).message).toMatch(/entry 1 \(a\).*empty/);
    expect(invalid(() => Keyring.parse(`a.b:${K1}`)).message).toMatch(/entry 1.*key id/);
    expect(invalid(() => Keyring.parse(K1)).message).toMatch(/entry 1: expected id:base64-key/);
  });

  it('never puts key material in messages', () => {
    const secret = Buffer.alloc(31, 7).toString('base64');
    expect(invalid(() => Keyring.parse(`a:${secret}`)).message).not.toContain(secret);
  });
});

describe('keys in code and from the environment', () => {
  it('builds from { current, keys } and refuses a current key that is not given', () => {
    expect(Keyring.from({ current: 'x', keys: { x: Buffer.alloc(32, 3) } }).currentId).toBe('x');
    expect(invalid(() => Keyring.from({ current: 'y', keys: { x: K1 } })).message).toMatch(/current key "y"/);
    expect(invalid(() => Keyring.from({ current: 'x', keys: {} })).message).toMatch(/no keys/);
  });

  it('reads TIDEMARK_KEYS, undefined when unset or blank', () => {
    expect(Keyring.fromEnv({ TIDEMARK_KEYS: `e:${K1}` })?.currentId).toBe('e');
    expect(Keyring.fromEnv({})).toBeUndefined();
    expect(Keyring.fromEnv({ TIDEMARK_KEYS: '  ' })).toBeUndefined();
    expect(invalid(() => Keyring.fromEnv({ TIDEMARK_KEYS: 'e:zz' })).message).toMatch(
      /TIDEMARK_KEYS: entry 1 \(e\)/,
    );
  });
});
