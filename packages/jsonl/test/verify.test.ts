import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf, openJsonlStore, repairSession, sessionPaths, verifySession } from '../src/index.js';
import { ev, evs, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('verify and repair', () => {
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
    expect(await verifySession({ root }, 'done')).toEqual({
      checked: 1,
      sessions: [{ sessionId: 'done', status: 'ok', eventCount: 3, committedSeq: 2, problems: [] }],
      problems: [],
    });
    const interrupted = await verifySession({ root }, 'open');
    expect(interrupted.sessions[0]).toMatchObject({ status: 'interrupted', eventCount: 4, committedSeq: 1 });
    expect(interrupted.problems).toEqual([
      {
        kind: 'interrupted',
        sessionId: 'open',
        seq: 2,
        file: open,
        message: 'interrupted turn: 2 event(s) after the last boundary (seq 1)',
      },
    ]);
    await expect(verifySession({ root }, 'nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(readFileSync(open).equals(before)).toBe(true);

    expect(await repairSession({ root }, 'open')).toEqual({
      sessionId: 'open',
      eventCount: 4,
      removed: [],
      quarantined: [],
    });
    const report = await repairSession({ root }, 'open', { tail: 'cut' });
    expect(report).toMatchObject({ sessionId: 'open', cutEvents: 2, eventCount: 2 });
    expect(report.quarantined).toHaveLength(1);
    // The removed tail names where it was in the log (its batch: seq 2 at the end of the old log).
    const secondBatch = before.indexOf('{"seq":2');
    expect(report.removed).toEqual([
      expect.objectContaining({
        kind: 'interrupted',
        sessionId: 'open',
        seq: 2,
        offset: secondBatch,
        bytes: before.length - secondBatch,
        file: open,
        quarantinedAt: report.quarantined[0],
      }),
    ]);
    expect(readFileSync(report.quarantined[0]!, 'utf8').trimEnd().split('\n')).toHaveLength(2);
    expect((await verifySession({ root }, 'open')).sessions[0]).toMatchObject({
      status: 'ok',
      eventCount: 2,
    });
  });

  it('verify() with no id checks every session, reporting a corrupt log as a problem instead of failing', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    for (const id of ['b', 'a', 'c']) {
      await store.create({ id });
      await store.append(id, evs(0, 2, true));
    }
    await store.append('c', [ev(2)]);
    await store.close();
    const damaged = sessionPaths(root, bucketOf(undefined), 'b').log;
    const text = readFileSync(damaged, 'utf8');
    const offset = text.indexOf('{"seq":0');
    writeFileSync(damaged, text.slice(0, offset + 3) + 'X' + text.slice(offset + 4));

    const again = await openJsonlStore({ root });
    const report = await again.verify();
    await again.close();
    expect(report.checked).toBe(3);
    expect(report.sessions.map((s) => [s.sessionId, s.status])).toEqual([
      ['a', 'ok'],
      ['b', 'corrupt'],
      ['c', 'interrupted'],
    ]);
    expect(report.problems.map((p) => [p.sessionId, p.kind])).toEqual([
      ['b', 'corrupt'],
      ['c', 'interrupted'],
    ]);
  });

  it('repair sets a torn tail aside and reports where it was, its seq and its quarantine file', async () => {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    await store.create({ id: 's' });
    await store.append('s', evs(0, 2, true));
    await store.close();
    const log = sessionPaths(root, bucketOf(undefined), 's').log;
    const committed = readFileSync(log).length;
    appendFileSync(log, '{"seq":2');
    const report = await repairSession({ root }, 's');
    expect(report).toMatchObject({ sessionId: 's', eventCount: 2, tornBytes: 8 });
    expect(report.removed).toEqual([
      {
        kind: 'torn',
        sessionId: 's',
        message: expect.stringContaining('(partial-line)'),
        seq: 2,
        offset: committed,
        bytes: 8,
        file: log,
        quarantinedAt: report.quarantined[0],
      },
    ]);
    expect(readFileSync(report.quarantined[0]!, 'utf8')).toBe('{"seq":2');
    expect(readFileSync(log).length).toBe(committed);
  });
});
