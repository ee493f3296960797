// `tidemark import` and `export` through the built binary: bad input is INVALID and stores
// nothing, the exported meta survives the round trip, and a failing stdout is an IO failure.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { BIN, expectOneErrorLine, exportLines, home, T, tidemark, useTempHome } from './run-cli.js';

const unavailable = inject('unavailable');
useTempHome();

function listedSessions(store: string): { id: string; createdAt: string }[] {
  return (
    JSON.parse(tidemark(['--store', store, 'list', '--json']).stdout) as {
      sessions: { id: string; createdAt: string }[];
    }
  ).sessions;
}

describe('import rejects a malformed export', () => {
  // Regression: a header without a version was reported as "version undefined is newer".
  it('an export header without a version is INVALID naming the field, not "version undefined is newer"', () => {
    const [header, ...events] = exportLines('v1').split('\n');
    const unversioned = JSON.stringify({ ...JSON.parse(header!), version: undefined });
    const run = tidemark(['--store', 'memory:', 'import'], { input: [unversioned, ...events].join('\n') });
    expectOneErrorLine(run, 'INVALID', 6);
    expect(run.stderr).toContain('"version"');
    expect(run.stderr).not.toContain('newer');
  });

  // Regression: bytes that are not UTF-8 were decoded leniently and stored as U+FFFD.
  it.skipIf(unavailable.sqlite !== undefined)(
    'rejects a stream that is not valid UTF-8 instead of storing replacement characters',
    () => {
      const store = `sqlite:${join(home(), 's.db')}`;
      const text = Buffer.from(exportLines('u1', 'caf\u00e9 XX'), 'utf8');
      // Replace "XX" with two bytes that are not UTF-8 (a lone continuation byte and 0xff).
      const at = text.indexOf('XX');
      text[at] = 0x80;
      text[at + 1] = 0xff;
      const run = tidemark(['--store', store, 'import'], { input: text });
      expect(run.stderr).toMatch(/^tidemark: INVALID: \S/);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(run.status).toBe(6);
      expect(listedSessions(store)).toEqual([]);
      // The same stream, valid, imports.
      expect(
        tidemark(['--store', store, 'import'], { input: exportLines('u1', 'caf\u00e9 ok') }).status,
      ).toBe(0);
    },
  );

  // Regression: an eventCount given as a string skipped the check that catches a truncated stream.
  it.skipIf(unavailable.sqlite !== undefined)(
    'rejects an eventCount or version that is not a count, instead of skipping the truncation check',
    () => {
      const store = `sqlite:${join(home(), 's.db')}`;
      const lines = exportLines('h1', 'x').split('\n');
      const header = JSON.parse(lines[0]!) as { version: unknown; summary: { eventCount: unknown } };
      // A truncated stream (one event of the announced two), its count given as a string.
      const truncated = [
        JSON.stringify({ ...header, summary: { ...header.summary, eventCount: '2' } }),
        lines[1],
        '',
      ].join('\n');
      const run = tidemark(['--store', store, 'import'], { input: truncated });
      expect(run.stderr).toMatch(/^tidemark: INVALID: .*eventCount/);
      expect(run.status).toBe(6);
      const badVersion = [JSON.stringify({ ...header, version: 0.5 }), ...lines.slice(1)].join('\n');
      const second = tidemark(['--store', store, 'import'], { input: badVersion });
      expect(second.stderr).toMatch(/^tidemark: INVALID: .*version/);
      expect(second.status).toBe(6);
      expect(listedSessions(store)).toEqual([]);
    },
  );
});

describe.skipIf(unavailable.sqlite !== undefined)('import keeps the meta of the export', () => {
  // Regression: import gave the session a new creation time, so export → import did not round-trip.
  it('the imported session has the exported createdAt, so export → import round-trips', () => {
    const store = `sqlite:${join(home(), 's.db')}`;
    expect(tidemark(['--store', store, 'import'], { input: exportLines('c1', 'hello') }).status).toBe(0);
    expect(listedSessions(store).map((s) => [s.id, s.createdAt])).toEqual([['c1', T]]);
    const header = JSON.parse(tidemark(['--store', store, 'export', 'c1']).stdout.split('\n')[0]!) as {
      meta: { createdAt: string };
    };
    expect(header.meta.createdAt).toBe(T);
  });
});

describe.skipIf(unavailable.sqlite !== undefined || !existsSync('/dev/full'))(
  'export to a stdout that fails',
  () => {
    // Regression: a failed write to stdout was an unhandled 'error' event with a stack, or exit 0.
    it('export to a full disk is one IO line and exit 9, not a stack trace and not success', () => {
      const store = `sqlite:${join(home(), 's.db')}`;
      expect(
        tidemark(['--store', store, 'import'], { input: exportLines('f1', 'x'.repeat(200_000)) }).status,
      ).toBe(0);
      const full = openSync('/dev/full', 'w');
      try {
        const result = spawnSync(process.execPath, [BIN, '--store', store, 'export', 'f1'], {
          stdio: ['ignore', full, 'pipe'],
          cwd: home(),
          env: { PATH: process.env.PATH, TIDEMARK_HOME: home() },
        });
        const stderr = result.stderr.toString('utf8');
        expect(stderr).not.toMatch(/\n\s+at /);
        expect(stderr.trimEnd().split('\n')).toHaveLength(1);
        expect(stderr).toMatch(/^tidemark: IO: .*ENOSPC/);
        expect(result.status).toBe(9);
      } finally {
        closeSync(full);
      }
    });
  },
);
