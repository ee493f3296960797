// PostgreSQL suite against raw pg baselines in the same run (issue 11 targets in brackets).
// Run: pnpm --filter @tidemark/postgres bench   (TIDEMARK_PG_URL overrides the server).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPostgresStore } from '../dist/index.js';

const url = process.env.TIDEMARK_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const schema = `bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Pool({ connectionString: url, max: 8 });
const time = () => new Date().toISOString();
const ev = (seq, n = 1) =>
  Array.from({ length: n }, (_, i) => ({
    seq: seq + i,
    type: 'step',
    time: time(),
    data: { text: 'x'.repeat(100), i },
  }));

async function timed(n, fn) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  return Number(process.hrtime.bigint() - start) / 1e6 / n;
}

const results = [];
const report = (name, ours, raw, limit, higherIsBetter = false) => {
  const ratio = ours / raw;
  results.push({
    name,
    ours: ours.toFixed(3),
    raw: raw.toFixed(3),
    ratio: ratio.toFixed(2),
    target: `${higherIsBetter ? '>=' : '<='} ${limit}`,
  });
};

try {
  const store = await openPostgresStore({ connectionString: url, schema, poolSize: 8 });
  await admin.query(
    `CREATE TABLE "${schema}".raw (session_id text COLLATE "C", seq bigint, type text, time text, data text, checksum integer, PRIMARY KEY (session_id, seq))`,
  );
  const raw = await admin.connect();
  const N = 300;
  // Warm-up: JIT, pool connections and plan caches, so the first measured case is not penalised.
  const warm = await store.create({});
  for (let s = 0; s < 200; s++) await store.append(warm.id, ev(s));
  for (let s = 0; s < 200; s++)
    await raw.query(`INSERT INTO "${schema}".raw VALUES ('warm', $1, 'step', $2, '{}', 0)`, [s, time()]);
  // 1-event and 10-event appends vs raw autocommit INSERTs of the same rows.
  for (const size of [1, 10]) {
    const meta = await store.create({});
    let seq = 0;
    await store.append(meta.id, ev(seq++, 1));
    const ours = await timed(N, async () => {
      await store.append(meta.id, ev(seq, size));
      seq += size;
    });
    let rseq = 0;
    const id = `raw${size}`;
    const base = await timed(N, async () => {
      const rows = ev(rseq, size);
      rseq += size;
      await raw.query(
        `INSERT INTO "${schema}".raw SELECT $1, u.s, u.t, u.tm, u.d, 0 FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[]) AS u(s, t, tm, d)`,
        [
          id,
          rows.map((r) => r.seq),
          rows.map((r) => r.type),
          rows.map((r) => r.time),
          rows.map((r) => JSON.stringify(r.data)),
        ],
      );
    });
    report(`${size}-event append (ms)`, ours, base, size === 1 ? 1.6 : 1.7);
  }
  // Load of 10,000 events vs a raw SELECT of them.
  const big = await store.create({});
  for (let s = 0; s < 10_000; s += 500) await store.append(big.id, ev(s, 500));
  const loadOurs = await timed(10, () => store.load(big.id));
  const loadRaw = await timed(10, () =>
    raw.query(
      `SELECT seq, type, time, data, checksum FROM "${schema}".events WHERE session_id = $1 ORDER BY seq`,
      [big.id],
    ),
  );
  report('load 10,000 events (ms)', loadOurs, loadRaw, 1.5);
  // First list page at 1,000 vs 100,000 sessions.
  const fill = (from, to) =>
    admin.query(
      `INSERT INTO "${schema}".sessions (id, format_version, created_at, updated_at, next_seq, committed_seq, interrupted)
    SELECT 'fill' || g, 1, '2026-01-01T00:00:00.000Z', to_char(timestamp '2026-01-01' + g * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 0, -1, false
    FROM generate_series($1::int, $2::int) g`,
      [from, to],
    );
  await fill(1, 1000);
  await admin.query(`ANALYZE "${schema}".sessions`);
  const small = await timed(50, () => store.list({ limit: 100 }));
  await fill(1001, 100_000);
  await admin.query(`ANALYZE "${schema}".sessions`);
  const large = await timed(50, () => store.list({ limit: 100 }));
  report('first list page, 100,000 vs 1,000 sessions (ms)', large, small, 1.5);
  // 64 sessions appending at once through a pool of 8 vs raw pooled INSERTs (appends per second).
  const ids = [];
  for (let i = 0; i < 64; i++) {
    const m = await store.create({});
    await store.append(m.id, ev(0));
    ids.push(m.id);
  }
  const rounds = 10;
  let start = Date.now();
  await Promise.all(
    ids.map(async (id) => {
      for (let r = 1; r <= rounds; r++) await store.append(id, ev(r));
    }),
  );
  const oursRate = (64 * rounds) / ((Date.now() - start) / 1000);
  start = Date.now();
  await Promise.all(
    ids.map(async (_id, k) => {
      for (let r = 1; r <= rounds; r++)
        await admin.query(`INSERT INTO "${schema}".raw VALUES ($1, $2, 'step', $3, $4, 0)`, [
          `pool${k}`,
          r,
          time(),
          '{"i":1}',
        ]);
    }),
  );
  const rawRate = (64 * rounds) / ((Date.now() - start) / 1000);
  report('64 sessions, pool of 8 (appends/s)', oursRate, rawRate, 0.8, true);
  raw.release();
  await store.close();
} finally {
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}
console.table(results);
