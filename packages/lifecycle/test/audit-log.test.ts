// The audit log survives a crash that tore its last line.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AUDIT_FILE, AuditLog } from '../src/index.js';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tidemark-lifecycle-audit-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('audit log after a torn final write', () => {
  // Guards: a record after a torn line must not be glued onto the fragment and lost.
  it('an entry recorded after a crash cut the previous line short is still readable', async () => {
    const log = new AuditLog(home);
    await log.record('created', 'a', 'memory:main');
    // A crash in the middle of the next record left half a line without its newline.
    const file = join(home, AUDIT_FILE);
    await writeFile(file, `${await readFile(file, 'utf8')}{"time":"2026-01-01T00:00:00.000Z","act`);
    expect((await log.read()).tornTail).toBe(true);

    const entry = await log.record('deleted', 'b', 'memory:main', { reason: 'x' });
    const after = await log.read();
    // The acknowledged entry must not be glued onto the torn fragment and lost as "not JSON".
    expect(after.entries.map((e) => [e.action, e.id])).toEqual([
      ['created', 'a'],
      ['deleted', 'b'],
    ]);
    expect(after.entries[1]).toEqual(entry);
    expect(await log.history('b')).toEqual([entry]);
  });
});
