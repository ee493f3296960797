// The address the browser really listens on, checked from outside the server: a TCP connection to
// every non-loopback address this machine has, at the browser's port, is refused; 127.0.0.1 serves
// with the token. The `host` option and the URL could both say 127.0.0.1 while the socket is bound
// to every interface (0.0.0.0 or ::); only a connection attempt tells the two apart.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { openMemoryStore } from '@tidemark/memory';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionBrowser } from '../src/index.js';
import { basePath, browse, rawGet } from './helpers.js';

/** The outcome of one TCP connection attempt: connected, or the errno that stopped it. */
function tryConnect(host: string, port: number): Promise<'connected' | string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    // No timing threshold decides the test: a timeout only ends an attempt that neither connects
    // nor is refused (a filtered address), and is reported as such, never as refused.
    socket.setTimeout(10_000, () => {
      socket.destroy();
      resolve('timeout');
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/**
 * Every address of this machine that is not loopback, as `connect` takes it: IPv4 and IPv6,
 * link-local IPv6 with its zone (`fe80::1%eth0`).
 */
function externalAddresses(): string[] {
  const out: string[] = [];
  for (const [name, entries] of Object.entries(networkInterfaces())) {
    for (const entry of entries ?? []) {
      if (entry.internal) continue;
      const linkLocal = entry.family === 'IPv6' && /^fe80:/i.test(entry.address);
      out.push(linkLocal ? `${entry.address}%${name}` : entry.address);
    }
  }
  return out;
}

/**
 * Linux: the local addresses of the listening TCP sockets on `port`, from /proc/net/tcp{,6}
 * (hex, as the kernel writes them), or undefined where /proc is not there.
 */
function listeningAddresses(port: number): string[] | undefined {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const found: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      if (file === '/proc/net/tcp') return undefined;
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [address, state] = [fields[1], fields[3]];
      // State 0A is LISTEN.
      if (address?.endsWith(`:${hexPort}`) && state === '0A') found.push(address.split(':')[0]!);
    }
  }
  return found;
}

describe('the address the browser listens on', () => {
  let browser: SessionBrowser;
  let store: Awaited<ReturnType<typeof openMemoryStore>>;
  beforeAll(async () => {
    store = await openMemoryStore();
    browser = await browse(store);
  });
  afterAll(async () => {
    await browser.close();
    await store.close();
  });

  it('refuses a TCP connection to every non-loopback address of the machine at its port', async () => {
    const addresses = externalAddresses();
    // A machine without one cannot show the property; that must read as a failure, never a pass.
    expect(
      addresses,
      'this machine has no non-loopback network address (os.networkInterfaces()), so the test cannot check that the browser refuses connections from outside loopback',
    ).not.toEqual([]);
    const outcomes = await Promise.all(
      addresses.map(async (address) => [address, await tryConnect(address, browser.port)] as const),
    );
    for (const [address, outcome] of outcomes) {
      expect(outcome, `a connection to ${address}:${browser.port}`).toBe('ECONNREFUSED');
    }
  });

  it('accepts connections on 127.0.0.1, and serves there only with the token', async () => {
    expect(await tryConnect('127.0.0.1', browser.port)).toBe('connected');
    expect((await rawGet(browser, basePath(browser))).status).toBe(200);
    expect((await rawGet(browser, '/')).status).toBe(403);
  });

  it('has exactly one listening socket on its port, bound to 127.0.0.1 (Linux /proc/net/tcp)', () => {
    const bound = listeningAddresses(browser.port);
    // Elsewhere than Linux the connection checks above are the whole test.
    if (bound === undefined) return;
    // 127.0.0.1 in the kernel's little-endian hex.
    expect(bound).toEqual(['0100007F']);
  });
});
