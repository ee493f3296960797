// Sealing as the README describes it, one step at a time with node:crypto's HMAC and cipher
// objects (not the package's code): what the vectors and batch tests compare the package's bytes with.
import { createCipheriv, createHmac, hkdfSync } from 'node:crypto';

/** `<iv>.<ciphertext and tag>` (base64url) of `plaintext` with `aad`, under `master`'s derived keys. */
export function referenceBody(master: Buffer, aad: string, plaintext: string): string {
  const key = (info: string) => Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), info, 32));
  const aadBytes = Buffer.from(aad, 'utf8');
  const plainBytes = Buffer.from(plaintext, 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(aadBytes.length);
  const iv = createHmac('sha256', key('tidemark-sealed/1 iv'))
    .update(length)
    .update(aadBytes)
    .update(plainBytes)
    .digest()
    .subarray(0, 12);
  const cipher = createCipheriv('aes-256-gcm', key('tidemark-sealed/1 enc'), iv);
  cipher.setAAD(aadBytes);
  const ct = Buffer.concat([cipher.update(plainBytes), cipher.final(), cipher.getAuthTag()]);
  return `${iv.toString('base64url')}.${ct.toString('base64url')}`;
}
