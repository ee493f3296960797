import { TidemarkError } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { defaultStoreAddress, parseStoreAddress, tidemarkHome } from '../src/address.js';
import { encodeExportEvent, encodeExportHeader, parseExport } from '../src/exchange.js';
import { CliError, describeFailure, EXIT_CODES } from '../src/exit-codes.js';
import { makeStyle, progressBar, renderTable, renderTimeline, truncate } from '../src/format.js';

const T = '2026-01-01T00:00:00.000Z';
const plain = makeStyle(false);

describe('store addresses', () => {
  it('parses every kind and resolves relative paths', () => {
    expect(parseStoreAddress('jsonl:data', '/w')).toEqual({
      kind: 'jsonl',
      dir: '/w/data',
      text: 'jsonl:/w/data',
    });
    expect(parseStoreAddress('sqlite:/x/s.db')).toEqual({
      kind: 'sqlite',
      file: '/x/s.db',
      text: 'sqlite:/x/s.db',
    });
    expect(parseStoreAddress('memory:')).toEqual({ kind: 'memory', text: 'memory:' });
    expect(parseStoreAddress('postgres://u:pw@h/db')).toMatchObject({
      kind: 'postgres',
      text: 'postgres://***@h/db',
    });
    for (const bad of ['', 'jsonl:', 'foo:bar', '/just/a/path', 'sqlite']) {
      expect(() => parseStoreAddress(bad)).toThrow(CliError);
    }
  });

  it('takes the schema parameter out of what pg sees and masks every credential in the display form', () => {
    expect(parseStoreAddress('postgresql://u:pw@h:5433/db?schema=s1&sslmode=disable')).toEqual({
      kind: 'postgres',
      url: 'postgresql://u:pw@h:5433/db?sslmode=disable',
      schema: 's1',
      text: 'postgresql://***@h:5433/db?sslmode=disable&schema=s1',
    });
    expect(parseStoreAddress('postgres://h/db?password=pw2&schema=a%20b')).toMatchObject({
      url: 'postgres://h/db?password=pw2',
      schema: 'a b',
      text: 'postgres://h/db?password=***&schema=a%20b',
    });
    // A raw `/` or `@` in the password must not leave part of it shown.
    expect(parseStoreAddress('postgres://u:p/w@x@h/db').text).toBe('postgres://***@h/db');
    expect(() => parseStoreAddress('postgres://h/db?schema=')).toThrow(CliError);
  });

  it('expands a leading ~ or ~/ to the home directory passed in, and nothing else', () => {
    expect(parseStoreAddress('sqlite:~/s.db', '/w', '/home/me')).toEqual({
      kind: 'sqlite',
      file: '/home/me/s.db',
      text: 'sqlite:/home/me/s.db',
    });
    expect(parseStoreAddress('jsonl:~', '/w', '/home/me')).toMatchObject({ dir: '/home/me' });
    expect(parseStoreAddress('jsonl:~/.tidemark/sessions', '/w', '/home/me')).toMatchObject({
      dir: '/home/me/.tidemark/sessions',
    });
    // ~user, a ~ inside the path and an absolute path stay as they are.
    expect(parseStoreAddress('jsonl:~bob/x', '/w', '/home/me')).toMatchObject({ dir: '/w/~bob/x' });
    expect(parseStoreAddress('jsonl:a/~/b', '/w', '/home/me')).toMatchObject({ dir: '/w/a/~/b' });
    expect(parseStoreAddress('sqlite:/x/~/s.db', '/w', '/home/me')).toMatchObject({ file: '/x/~/s.db' });
  });

  it('defaults to jsonl:$TIDEMARK_HOME/sessions', () => {
    expect(tidemarkHome({ TIDEMARK_HOME: '/h' })).toBe('/h');
    expect(defaultStoreAddress({ TIDEMARK_HOME: '/h' })).toBe('jsonl:/h/sessions');
    expect(tidemarkHome({})).toMatch(/\.tidemark$/);
  });
});

describe('exit codes and failures', () => {
  it('gives every class its own status', () => {
    const values = Object.values(EXIT_CODES);
    expect(new Set(values).size).toBe(values.length);
  });

  it('describes typed errors on one line with their location', () => {
    const error = new TidemarkError('CORRUPT', 'bad line\nsecond', {
      location: { file: '/a.jsonl', offset: 12 },
    });
    expect(describeFailure(error)).toEqual({
      code: 'CORRUPT',
      message: 'bad line second (at /a.jsonl, byte 12)',
      expected: true,
    });
    expect(describeFailure(new CliError('USAGE', 'x'))).toMatchObject({ code: 'USAGE', expected: true });
    expect(describeFailure(new RangeError('boom'))).toMatchObject({ code: 'INTERNAL', expected: false });
  });

  it('keeps a location with a newline in its path (a directory name) on the one line too', () => {
    const error = new TidemarkError('CORRUPT', 'bad line', {
      location: { file: '/odd\ndir/a.jsonl', offset: 3 },
    });
    expect(describeFailure(error).message).toBe('bad line (at /odd dir/a.jsonl, byte 3)');
  });

  it('puts a multi-line CliError message (e.g. from parseArgs) on one line', () => {
    expect(describeFailure(new CliError('USAGE', 'ambiguous.\nDid you forget?\n  Use --x=-1.'))).toEqual({
      code: 'USAGE',
      message: 'ambiguous. Did you forget? Use --x=-1.',
      expected: true,
    });
  });
});

describe('export format', () => {
  const summary = {
    id: 's1',
    createdAt: T,
    updatedAt: T,
    cwd: '/p',
    parent: { id: 'p0', seq: 3 },
    eventCount: 2,
    committedSeq: 1,
    interrupted: false,
    title: 't',
    tags: ['x'],
    attrs: { k: [1, { z: null }] },
  };
  const events = [
    { seq: 0, type: 'user/message', time: T, data: { text: 'hi', __proto__: 'kept' } },
    { seq: 1, type: 'turn/end', time: T, data: null },
  ];

  it('round trips header and events', () => {
    const text = [encodeExportHeader(summary), ...events.map(encodeExportEvent)].join('\n');
    const parsed = parseExport(`${text}\n`);
    expect(parsed.header.meta).toEqual({ id: 's1', createdAt: T, cwd: '/p', parent: { id: 'p0', seq: 3 } });
    expect(parsed.header.summary).toMatchObject({
      title: 't',
      tags: ['x'],
      attrs: summary.attrs,
      eventCount: 2,
    });
    expect(parsed.events.map(encodeExportEvent)).toEqual(events.map(encodeExportEvent));
  });

  it('rejects truncated, gapped, foreign and newer streams with the line number', () => {
    const header = encodeExportHeader(summary);
    const e0 = encodeExportEvent(events[0]!);
    const e1 = encodeExportEvent(events[1]!);
    expect(() => parseExport(`${header}\n${e0}\n`)).toThrow(/announces 2 events but 1/);
    expect(() => parseExport(`${header}\n${e1}\n${e0}\n`)).toThrow(/line 2: expected seq 0/);
    expect(() => parseExport(`${header}\n${e0}\n{oops\n`)).toThrow(/line 3: not JSON/);
    expect(() => parseExport('{"format":"other"}\n')).toThrow(/not a tidemark export/);
    expect(() => parseExport('')).toThrow(/empty input/);
    const newer = header.replace('"version":1', '"version":99');
    expect(() => parseExport(`${newer}\n`)).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_FORMAT' }));
    // A header without a version, or with one that is not a number, is bad input naming the
    // field, not "a newer version".
    const unversioned = JSON.stringify({ ...JSON.parse(header), version: undefined });
    const texts = [
      unversioned,
      header.replace('"version":1', '"version":"1"'),
      header.replace('"version":1', '"version":null'),
    ];
    for (const text of texts) {
      expect(() => parseExport(`${text}\n${e0}\n${e1}\n`)).toThrow(
        expect.objectContaining({ code: 'INVALID', message: expect.stringMatching(/line 1: .*version/) }),
      );
    }
    const bad = JSON.stringify({ seq: 0, type: 'x', time: 'yesterday', data: 1 });
    expect(() => parseExport(`${header}\n${bad}\n${e1}\n`)).toThrow(
      expect.objectContaining({ code: 'INVALID' }),
    );
  });
});

describe('rendering', () => {
  it('aligns table columns', () => {
    expect(
      renderTable(
        ['A', 'BB'],
        [
          ['xxx', 'y'],
          ['z', ''],
        ],
      ),
    ).toBe('A    BB\nxxx  y\nz');
  });

  it('uses colour only on a TTY without NO_COLOR', () => {
    expect(makeStyle(true, {}).red('x')).toContain('\u001b[');
    expect(makeStyle(true, { NO_COLOR: '1' }).red('x')).toBe('x');
    expect(makeStyle(false, {}).red('x')).toBe('x');
  });

  it('renders turns, tool calls with results and the interrupted tail', () => {
    const timeline = renderTimeline(
      [
        { seq: 0, type: 'turn/start', time: T, data: null },
        { seq: 1, type: 'user/message', time: T, data: { text: 'fix it' } },
        { seq: 2, type: 'tool/call', time: T, data: { callId: 'c1', name: 'bash', input: { cmd: 'ls' } } },
        { seq: 3, type: 'tool/result', time: T, data: { callId: 'c1', error: 'denied' } },
        { seq: 4, type: 'turn/end', time: T, data: null },
        { seq: 5, type: 'turn/start', time: T, data: null },
      ],
      4,
      plain,
    );
    const lines = timeline.split('\n');
    expect(lines[0]).toContain('── turn 1 ──');
    expect(lines[1]).toContain('user: fix it');
    expect(lines[2]).toContain('→ tool bash [c1] {"cmd":"ls"}');
    expect(lines[3]).toContain('✗ result [c1] denied');
    expect(lines[4]).toContain('end of turn 1');
    expect(lines[6]).toContain('interrupted: 1 event(s) after the last boundary at seq 4');
  });

  it('draws a progress bar and truncates', () => {
    expect(progressBar(5, 10, 'sessions', 10)).toBe('[#####-----]  50% 5/10 sessions');
    expect(progressBar(0, 0, 'x', 4)).toBe('[####] 100% 0/0 x');
    expect(truncate('a  b\nc', 10)).toBe('a b c');
    expect(truncate('abcdef', 4)).toBe('abc…');
  });
});
