import { connect, createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy, targetOf } from '../../src/harness/index.js';
import {
  admin,
  connectClient,
  createScratch,
  messageOf,
  PG_URL,
  requireOrSkip,
  type Scratch,
  serverUnavailable,
} from './fixtures/pg-server.js';

const unavailable = await serverUnavailable();
/** What pg reports when the socket under a client goes away. */
const CONNECTION_LOST = /Connection terminated|ECONNRESET|not queryable|EPIPE/;

// Skipped only without a server outside CI (requireOrSkip fails the suite when CI=true).
describe.skipIf(requireOrSkip(unavailable, 'a PostgreSQL server'))('TCP fault proxy (raw pg)', () => {
  let scratch: Scratch;
  let proxy: FaultProxy;
  const clients: { end(): Promise<void> }[] = [];

  beforeAll(async () => {
    scratch = await createScratch();
  });
  afterAll(async () => {
    await scratch?.drop();
  });
  beforeAll(async () => {
    proxy = await startFaultProxy({ target: targetOf(PG_URL) });
  });
  afterEach(async () => {
    proxy.setFault({ mode: 'pass' });
    for (const client of clients.splice(0)) await client.end().catch(() => undefined);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  async function viaProxy(options: { query_timeout?: number; connectionTimeoutMillis?: number } = {}) {
    const client = await connectClient({ connectionString: proxy.via(scratch.roleUrl), ...options });
    clients.push(client);
    return client;
  }

  const countRows = async (id: number) =>
    Number(
      (await admin<{ n: string }>(`SELECT count(*) AS n FROM ${scratch.table} WHERE id = $1`, [id]))[0]!.n,
    );

  it('passes traffic through unchanged', async () => {
    const client = await viaProxy();
    const { rows } = await client.query<{ greeting: string }>("SELECT 'hello' || $1::text AS greeting", [
      '!',
    ]);
    expect(rows).toEqual([{ greeting: 'hello!' }]);
    expect(proxy.connections.length).toBeGreaterThan(0);
  });

  it('drop: a live connection is destroyed and new ones are refused', async () => {
    const client = await viaProxy();
    proxy.setFault({ mode: 'drop' });
    expect(await messageOf(client.query('SELECT 1'))).toMatch(CONNECTION_LOST);
    expect(await messageOf(viaProxy())).toMatch(CONNECTION_LOST);
  });

  it('blackhole: queries and connects time out; healing delivers the held traffic', async () => {
    const client = await viaProxy({ query_timeout: 300 });
    proxy.setFault({ mode: 'blackhole' });
    expect(await messageOf(client.query('SELECT 1'))).toMatch(/Query read timeout/);
    expect(await messageOf(viaProxy({ connectionTimeoutMillis: 300 }))).toMatch(/timeout/i);

    proxy.setFault({ mode: 'pass' });
    const healed = await viaProxy();
    proxy.setFault({ mode: 'blackhole' });
    const pending = healed.query('SELECT 42 AS answer');
    const settled = await Promise.race([pending.then(() => 'settled'), sleep(300).then(() => 'held')]);
    expect(settled).toBe('held');
    proxy.setFault({ mode: 'pass' });
    expect((await pending).rows).toEqual([{ answer: 42 }]);
  });

  it('delay: each chunk is held the given time', async () => {
    const client = await viaProxy();
    proxy.setFault({ mode: 'delay', ms: 150 });
    const started = performance.now();
    await client.query('SELECT 1');
    // One chunk each way: at least two delays.
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('cut to-server after N bytes: the statement never reaches the server', async () => {
    const client = await viaProxy();
    proxy.setFault({ mode: 'cut', direction: 'to-server', afterBytes: 10 });
    const insert = client.query(
      `INSERT INTO ${scratch.table} (id, note) VALUES (1, 'cut before the server')`,
    );
    expect(await messageOf(insert)).toMatch(CONNECTION_LOST);
    expect(await countRows(1)).toBe(0);
  });

  it('cut to-client after N bytes: the server ran the statement, the client sees a lost connection', async () => {
    const client = await viaProxy();
    proxy.setFault({ mode: 'cut', direction: 'to-client', afterBytes: 3 });
    const insert = client.query(`INSERT INTO ${scratch.table} (id, note) VALUES (2, 'reply cut')`);
    expect(await messageOf(insert)).toMatch(CONNECTION_LOST);
    await until(async () => (await countRows(2)) === 1);
  });

  it('commit-then-cut (simple query): committed on the server, a lost connection for the client', async () => {
    const client = await viaProxy();
    proxy.setFault({ mode: 'commit-then-cut' });
    await client.query('BEGIN');
    await client.query(`INSERT INTO ${scratch.table} (id, note) VALUES (3, 'committed, reply lost')`);
    const cut = proxy.nextCutCommit();
    expect(await messageOf(client.query('COMMIT'))).toMatch(CONNECTION_LOST);
    expect((await cut).reply).toMatchObject({ tags: ['COMMIT'], ready: true });
    expect(await countRows(3)).toBe(1);
  });

  it('commit-then-cut (extended protocol, named statement reused): same outcome', async () => {
    const client = await viaProxy();
    const commit = { name: 'tidemark_commit', text: 'END TRANSACTION' };
    // First use parses the named statement while the proxy passes traffic.
    await client.query('BEGIN');
    await client.query(`INSERT INTO ${scratch.table} (id, note) VALUES (4, 'first')`);
    await client.query(commit);
    proxy.setFault({ mode: 'commit-then-cut' });
    // Second use sends only Bind/Execute: the proxy must remember that the statement is a COMMIT.
    await client.query('BEGIN');
    await client.query(`INSERT INTO ${scratch.table} (id, note) VALUES (5, 'second')`);
    const cut = proxy.nextCutCommit();
    expect(await messageOf(client.query(commit))).toMatch(CONNECTION_LOST);
    expect((await cut).reply.tags).toEqual(['COMMIT']);
    expect(await countRows(5)).toBe(1);
  });

  it('commit-then-cut leaves non-COMMIT statements alone and reports a rolled-back COMMIT', async () => {
    const client = await viaProxy();
    proxy.setFault({ mode: 'commit-then-cut' });
    await client.query('BEGIN');
    await expect(client.query('SELECT 1/0')).rejects.toMatchObject({ code: '22012' });
    const cut = proxy.nextCutCommit();
    expect(await messageOf(client.query('COMMIT'))).toMatch(CONNECTION_LOST);
    // pg answers COMMIT of a failed transaction with the tag ROLLBACK: the store must check it.
    expect((await cut).reply.tags).toEqual(['ROLLBACK']);
  });
  // Guards the outcome-unknown case of single-statement appends: an autocommit write is its own
  // commit, so `writes: true` cuts after it; `once` lets the retry through.
  it('commit-then-cut with writes and once: an autocommit INSERT lands, the client loses it, the retry passes', async () => {
    const client = await viaProxy();
    proxy.setFault({ mode: 'commit-then-cut', writes: true, once: true });
    const cut = proxy.nextCutCommit();
    const insert = { text: `INSERT INTO ${scratch.table} (id, note) VALUES ($1, $2)`, values: [6, 'landed'] };
    expect(await messageOf(client.query(insert))).toMatch(CONNECTION_LOST);
    expect((await cut).reply.tags).toEqual(['INSERT 0 1']);
    expect(await countRows(6)).toBe(1);
    expect(proxy.fault.mode).toBe('pass');
    const again = await viaProxy();
    await again.query(`INSERT INTO ${scratch.table} (id, note) VALUES (7, 'not cut')`);
    expect(await countRows(7)).toBe(1);
  });
});

describe('TCP fault proxy (plain TCP, no server needed)', () => {
  // The cut's byte budget is exact across chunks: no fewer bytes, no more.
  it('cut to-client forwards exactly N bytes of a burst, then closes', async () => {
    const payload = Buffer.alloc(1024 * 1024, 7);
    // The proxy tears the connection down mid-burst, so this end may see ECONNRESET or EPIPE while
    // it still writes: expected, and unhandled it would crash the test process.
    const server = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end(payload);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const address = server.address() as { port: number };
    const proxy = await startFaultProxy({
      target: { host: '127.0.0.1', port: address.port },
      fault: { mode: 'cut', direction: 'to-client', afterBytes: 300_000 },
    });
    const received = await new Promise<number>((resolve) => {
      let bytes = 0;
      const socket = connect(proxy.port, '127.0.0.1');
      socket.on('data', (chunk) => {
        bytes += chunk.length;
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(bytes));
    });
    expect(received).toBe(300_000);
    await proxy.close();
    await new Promise((resolve) => server.close(resolve));
  });
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function until(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(25);
  }
}
