import { describe, expect, it } from 'vitest';
import {
  BackendReplyWatcher,
  FrontendCommitWatcher,
  isCommitSql,
  isWriteSql,
} from '../../src/harness/index.js';

const cstr = (text: string) => Buffer.from(`${text}\0`);
function message(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}
function startup(code: number, extra = Buffer.alloc(0)): Buffer {
  const header = Buffer.alloc(8);
  header.writeInt32BE(8 + extra.length, 0);
  header.writeInt32BE(code, 4);
  return Buffer.concat([header, extra]);
}
const int16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const STARTUP = startup(196608, Buffer.concat([cstr('user'), cstr('postgres'), Buffer.from([0])]));
const SSL_REQUEST = startup(80877103);

describe('PostgreSQL wire parsing', () => {
  it('recognises bare COMMIT and END only', () => {
    for (const sql of [
      'COMMIT',
      'commit;',
      ' END ',
      'COMMIT WORK',
      'end transaction;',
      '-- c\nCOMMIT',
      '/* x */ COMMIT',
    ])
      expect(isCommitSql(sql), sql).toBe(true);
    for (const sql of [
      "COMMIT PREPARED 'x'",
      'INSERT INTO t VALUES (1); COMMIT',
      'SELECT 1',
      'ENDX',
      'ROLLBACK',
    ])
      expect(isCommitSql(sql), sql).toBe(false);
  });

  // Guards write-then-cut: the store's appends are data-modifying CTEs, recognised as writes.
  it('recognises writing statements, alone or in a WITH, and nothing else', () => {
    for (const sql of [
      'INSERT INTO t VALUES (1)',
      ' update t set a = 1',
      '/* x */ DELETE FROM t',
      'WITH head AS (UPDATE s SET n = 2 RETURNING id) INSERT INTO e SELECT 1',
    ])
      expect(isWriteSql(sql), sql).toBe(true);
    for (const sql of ['SELECT 1', 'WITH x AS (SELECT 1) SELECT * FROM x', 'COMMIT', 'BEGIN'])
      expect(isWriteSql(sql), sql).toBe(false);
  });

  it('finds a simple-query COMMIT after an SSL request and startup, even fed byte by byte', () => {
    const stream = Buffer.concat([
      SSL_REQUEST,
      STARTUP,
      message('Q', cstr('BEGIN')),
      message('Q', cstr('COMMIT')),
      message('X'),
    ]);
    const watcher = new FrontendCommitWatcher();
    const commitsAt: number[] = [];
    for (let i = 0; i < stream.length; i++)
      if (watcher.feed(stream.subarray(i, i + 1)) > 0) commitsAt.push(i);
    // Reported on the last byte of the COMMIT message, not before.
    expect(commitsAt).toEqual([stream.length - 6]);
  });

  it('follows extended-protocol statements and portals by name', () => {
    const watcher = new FrontendCommitWatcher();
    expect(watcher.feed(STARTUP)).toBe(0);
    const parse = message('P', cstr('s1'), cstr('COMMIT'), int16(0));
    const bind = (portal: string, statement: string) =>
      message('B', cstr(portal), cstr(statement), int16(0), int16(0), int16(0));
    const execute = (portal: string) => message('E', cstr(portal), Buffer.alloc(4));
    expect(watcher.feed(Buffer.concat([parse, bind('', 's1'), execute(''), message('S')]))).toBe(1);
    // A later Bind of the same named statement, without Parse, is still a COMMIT.
    expect(watcher.feed(Buffer.concat([bind('p', 's1'), execute('p'), message('S')]))).toBe(1);
    const other = message('P', cstr(''), cstr('SELECT 1'), int16(0));
    expect(watcher.feed(Buffer.concat([other, bind('', ''), execute(''), message('S')]))).toBe(0);
  });

  it('does not buffer a huge message to inspect it', () => {
    const watcher = new FrontendCommitWatcher();
    watcher.feed(STARTUP);
    const big = message('Q', cstr(`SELECT '${'x'.repeat(100_000)}'`));
    expect(watcher.feed(big)).toBe(0);
    expect(watcher.feed(message('Q', cstr('END')))).toBe(1);
  });

  it('reads the command tag, errors and ReadyForQuery of a reply', () => {
    const watcher = new BackendReplyWatcher();
    const error = message('E', Buffer.from('SERROR\0C40001\0Mcould not serialize\0\0'));
    watcher.feed(Buffer.concat([error, message('C', cstr('ROLLBACK'))]));
    expect(watcher.reply).toEqual({ tags: ['ROLLBACK'], errors: ['40001'], ready: false });
    watcher.feed(message('Z', Buffer.from('I')));
    expect(watcher.reply.ready).toBe(true);
  });
});
