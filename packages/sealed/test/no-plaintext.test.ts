import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionStore } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { openPostgresStore } from '@tidemark/postgres';
import { openSqliteStore } from '@tidemark/sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { sealStore } from '../src/index.js';
import {
  adminPool,
  dropSchemas,
  endAdmin,
  filesUnder,
  PG_URL,
  removeTempDirs,
  sealedSchema,
  serverAvailable,
  tempDir,
} from './backends.js';
import { ev, keyring } from './helpers.js';

// The marker is written in event data, firstPrompt (through a user/message event), title and
// attrs; then every byte the backend stored is searched. The same writes unsealed are the control
// that shows the search can find it.
const MARKER = 'MARKER-7f3a';

async function writeMarked(store: SessionStore): Promise<void> {
  await store.create({ id: 'm', title: `title ${MARKER}` });
  await store.append('m', [
    ev(0, { text: `prompt ${MARKER}` }, 'user/message'),
    ev(1, { out: MARKER }, 'turn/end'),
  ]);
  await store.update('m', { attrs: { note: MARKER } });
  await store.close();
}

function markerInFiles(dir: string): string[] {
  return filesUnder(dir).filter((file) => readFileSync(file).includes(MARKER));
}

afterAll(async () => {
  removeTempDirs();
  if (await available) await dropSchemas();
  await endAdmin();
});
const available = serverAvailable();

describe('no plaintext of a sealed session on disk', () => {
  it('JSONL: no file under the root holds the marker', async () => {
    const sealed = tempDir();
    await writeMarked(sealStore(await openJsonlStore({ root: sealed }), { keys: keyring }));
    expect(filesUnder(sealed).length).toBeGreaterThan(0);
    expect(markerInFiles(sealed)).toEqual([]);
    const plain = tempDir();
    await writeMarked(await openJsonlStore({ root: plain }));
    expect(markerInFiles(plain).length).toBeGreaterThan(0);
  });

  it('SQLite: neither the database nor its -wal holds the marker', async () => {
    const sealed = tempDir();
    const store = sealStore(await openSqliteStore({ path: join(sealed, 's.db') }), { keys: keyring });
    await writeMarked(store);
    expect(filesUnder(sealed).some((f) => f.endsWith('s.db'))).toBe(true);
    expect(markerInFiles(sealed)).toEqual([]);
    const plain = tempDir();
    await writeMarked(await openSqliteStore({ path: join(plain, 's.db') }));
    expect(markerInFiles(plain).length).toBeGreaterThan(0);
  });

  it("PostgreSQL: no row of the store's tables holds the marker", async (ctx) => {
    if (!(await available)) ctx.skip();
    const dump = async (schema: string) => {
      const tables = await adminPool().query<{ table_name: string }>(
        'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
        [schema],
      );
      let text = '';
      for (const { table_name } of tables.rows) {
        const rows = await adminPool().query<{ t: string }>(
          `SELECT t::text AS t FROM "${schema}"."${table_name}" t`,
        );
        text += rows.rows.map((r) => r.t).join('\n');
      }
      return text;
    };
    const sealed = sealedSchema();
    await writeMarked(
      sealStore(await openPostgresStore({ connectionString: PG_URL, schema: sealed }), { keys: keyring }),
    );
    const sealedDump = await dump(sealed);
    expect(sealedDump).toContain('tidemark:sealed');
    expect(sealedDump).not.toContain(MARKER);
    const plain = sealedSchema();
    await writeMarked(await openPostgresStore({ connectionString: PG_URL, schema: plain }));
    expect(await dump(plain)).toContain(MARKER);
  });
});
