import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../src/index.js';
import { dropSchemas, endAdmin, PG_URL, schemaName, serverAvailable } from './server.js';

const run = promisify(execFile);
const available = await serverAvailable();
const schema = schemaName('procs');
afterAll(async () => {
  if (!available) return;
  await dropSchemas([schema]);
  await endAdmin();
});

describe.skipIf(!available)('four processes, each with its own pool, appending to the same sessions', () => {
  it('no seq is lost, duplicated or interleaved', async () => {
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const meta = await store.create({});
      await store.append(meta.id, [
        { seq: 0, type: 'turn/end', time: new Date().toISOString(), data: 'start' },
      ]);
      ids.push(meta.id);
    }
    const rounds = 15;
    const script = fileURLToPath(new URL('./fixtures/appender.mjs', import.meta.url));
    const outputs = await Promise.all(
      ['w0', 'w1', 'w2', 'w3'].map((worker) =>
        run(process.execPath, [script, PG_URL, schema, worker, String(rounds), ...ids], { timeout: 120_000 }),
      ),
    );
    const conflicts = outputs.map((o) => (JSON.parse(o.stdout) as { conflicts: number }).conflicts);
    for (const id of ids) {
      const { events, summary } = await store.load(id);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
      expect(summary.eventCount).toBe(1 + 4 * rounds * 2);
      const seen = new Set<string>();
      for (let i = 1; i < events.length; i += 2) {
        const [first, second] = [
          events[i]!.data as Record<string, unknown>,
          events[i + 1]!.data as Record<string, unknown>,
        ];
        // The two events of one batch sit next to each other, in order: no interleaving.
        expect([first.worker, first.round, first.part]).toEqual([second.worker, second.round, 0]);
        expect(second.part).toBe(1);
        const key = `${String(first.worker)}/${String(first.round)}`;
        expect(seen.has(key)).toBe(false);
        seen.add(key);
      }
      expect(seen.size).toBe(4 * rounds);
    }
    await store.close();
    console.log(`conflicts seen by the workers: ${conflicts.join(', ')}`);
  }, 180_000);
});
