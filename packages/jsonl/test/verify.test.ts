import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore, repairSession, sessionPaths, verifySession } from '../src/index.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('verifySession and repairSession', () => {
  it('report ok, interrupted, and NOT_FOUND without touching anything; repair cuts an interrupted tail on request', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 'done', cwd: '/w' });
    await store.append('done', evs(0, 3, true));
    await store.create({ id: 'open' });
    await store.append('open', evs(0, 2, true));
    await store.append('open', [ev(2), ev(3)]);
    await store.close();

    const open = sessionPaths(root, bucketOf(undefined), 'open').log;
    const before = readFileSync(open);
    expect(await verifySession({ root }, 'done')).toMatchObject({
      status: 'ok',
      eventCount: 3,
      committedSeq: 2,
    });
    expect(await verifySession({ root }, 'open')).toMatchObject({
      status: 'interrupted',
      eventCount: 4,
      committedSeq: 1,
      interrupted: true,
      bytes: before.length,
    });
    await expect(verifySession({ root }, 'nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(readFileSync(open).equals(before)).toBe(true);

    expect(await repairSession({ root }, 'open')).toMatchObject({ eventCount: 4, quarantined: [] });
    const report = await repairSession({ root }, 'open', { tail: 'cut' });
    expect(report).toMatchObject({ cutEvents: 2, eventCount: 2 });
    expect(report.quarantined).toHaveLength(1);
    expect(readFileSync(report.quarantined[0]!, 'utf8').trimEnd().split('\n')).toHaveLength(2);
    expect(await verifySession({ root }, 'open')).toMatchObject({ status: 'ok', eventCount: 2 });
  });
});
