// Permission faults need an unprivileged process: tests run as root, for whom chmod denies nothing.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../src/index.js';
import { events, removeTempDirs, tempDir } from './helpers.js';

const probe = fileURLToPath(new URL('./fixtures/probe.mjs', import.meta.url));
const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;

afterEach(removeTempDirs);

interface Outcome {
  ok: boolean;
  value?: unknown;
  name?: string;
  code?: string;
  errno?: string;
}

function probeAsNobody(path: string, id: string): Record<string, Outcome> {
  const run = spawnSync(process.execPath, [probe, path, id], {
    uid: NOBODY,
    gid: NOBODY,
    encoding: 'utf8',
    timeout: 20_000,
  });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Record<string, Outcome>;
}

/** A call either answered truthfully about the existing session `s` (2 events) or failed with IO. */
function expectTruthOrIo(results: Record<string, Outcome>) {
  for (const [call, outcome] of Object.entries(results)) {
    if (!outcome.ok) {
      expect(outcome, call).toMatchObject({ name: 'TidemarkError', code: 'IO' });
      expect(typeof outcome.errno, call).toBe('string');
      continue;
    }
    if (call === 'has') expect(outcome.value).toBe(true);
    if (call === 'list') expect(outcome.value).toEqual(['s']);
    if (call === 'load') expect(outcome.value).toBe(2);
    if (call === 'append') throw new Error('an unprivileged append into a root-only database cannot succeed');
  }
}

async function seeded(dir: string) {
  const path = join(dir, 'store.db');
  const store = await openSqliteStore({ path });
  await store.create({ id: 's' });
  await store.append('s', events(0, 2, 2));
  await store.close();
  return path;
}

describe.skipIf(!isRoot)('permission denied (as an unprivileged child process)', () => {
  it('a directory the user cannot enter: open is IO, never an empty store', async () => {
    const dir = join(tempDir(), 'private');
    mkdirSync(dir, { mode: 0o700 });
    const path = await seeded(dir);
    const results = probeAsNobody(path, 's');
    expect(results.open).toMatchObject({ ok: false, code: 'IO' });
    expectTruthOrIo(results);
  });

  it('a database file the user cannot read: IO', async () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    const path = await seeded(dir);
    chmodSync(path, 0o600);
    const results = probeAsNobody(path, 's');
    expectTruthOrIo(results);
    expect(Object.values(results).some((o) => !o.ok)).toBe(true);
  });

  it('a database the user may read but not write: reads are true or IO, the append is IO', async () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    const path = await seeded(dir);
    chmodSync(path, 0o644);
    const results = probeAsNobody(path, 's');
    expectTruthOrIo(results);
    if (results.open!.ok) expect(results.append).toMatchObject({ ok: false, code: 'IO' });
  });

  it('the user owning the database works normally (the probe itself is sound)', async () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    chownSync(dir, NOBODY, NOBODY);
    const results = probeAsNobody(join(dir, 'own.db'), 'fresh');
    expect(results.open).toEqual({ ok: true, value: true });
    expect(results.has).toEqual({ ok: true, value: false });
    expect(results.load).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    expect(results.append).toMatchObject({ ok: false, code: 'NOT_FOUND' });
  });
});
