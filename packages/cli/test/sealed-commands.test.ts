// The CLI over sealed stores, through the built binary: keys from --keys FILE or TIDEMARK_KEYS;
// show, list and export decrypt with keys and show "sealed" without; import seals with keys and
// refuses to put plaintext beside sealed sessions without; migrate seals and unseals whole stores;
// rekey re-seals under the current key and names the keys that can be retired.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Keyring } from '@tidemark/sealed';
import { describe, expect, it } from 'vitest';
import { expectOneErrorLine, home, T, tidemark, useTempHome } from './run-cli.js';

useTempHome();

const K1 = `k1:${Buffer.alloc(32, 1).toString('base64')}`;
const K2 = `k2:${Buffer.alloc(32, 2).toString('base64')}`;
const MARK = 'MARKER-7f3a';

/** An export of a one-turn session whose title, prompt, attrs and every event carry the marker. */
function markedExport(id: string): string {
  return [
    {
      format: 'tidemark-export',
      version: 1,
      meta: { id, createdAt: T, cwd: '/work/app' },
      summary: {
        updatedAt: T,
        eventCount: 3,
        title: `${MARK} title`,
        tags: ['kept'],
        attrs: { note: `${MARK} attr` },
      },
    },
    { seq: 0, type: 'user/message', time: T, data: { text: `${MARK} prompt` } },
    { seq: 1, type: 'tool/result', time: T, data: { output: `${MARK} output` } },
    { seq: 2, type: 'turn/end', time: T, data: null },
  ]
    .map((line) => JSON.stringify(line))
    .join('\n')
    .concat('\n');
}

/** Every file under `dir`, read whole: the marker must be in none of them. */
function filesContaining(dir: string, text: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (readFileSync(path).includes(text)) found.push(path);
    }
  };
  walk(dir);
  return found;
}

const sessions = () => join(home(), 'sessions');
const withKeys = (keys: string) => ({ env: { TIDEMARK_KEYS: keys } });

describe('keys', () => {
  it('generates an id:base64 entry that TIDEMARK_KEYS takes', () => {
    const run = tidemark(['keys', 'generate', '--id', 'k7']);
    expect(run.status, run.stderr).toBe(0);
    const entry = run.stdout.trim();
    expect(entry).toMatch(/^k7:[A-Za-z0-9+/]{43}=$/);
    expect(Keyring.parse(entry).currentId).toBe('k7');
    expect(tidemark(['keys', 'generate']).stdout.trim()).toMatch(/^k\d{8}-\d{6}:/);
  });

  it('refuses a bad key id, a missing keys file and a malformed one, naming them', () => {
    expectOneErrorLine(tidemark(['keys', 'generate', '--id', 'a.b']), 'USAGE', 2);
    const missing = tidemark(['show', 'x', '--keys', join(home(), 'nope.keys')]);
    expectOneErrorLine(missing, 'NOT_FOUND', 3);
    expect(missing.stderr).toContain('nope.keys');
    writeFileSync(join(home(), 'bad.keys'), 'k1:not-base64!\n');
    const bad = tidemark(['show', 'x', '--keys', join(home(), 'bad.keys')]);
    expectOneErrorLine(bad, 'INVALID', 6);
    expect(bad.stderr).toContain('bad.keys');
    expect(bad.stderr).not.toContain('not-base64');
  });
});

describe('a sealed store through the CLI', () => {
  it('imports sealed with keys: no plaintext on disk; show and list open it with keys and say "sealed" without', () => {
    expect(tidemark(['import'], { input: markedExport('m1'), ...withKeys(K1) }).status).toBe(0);
    expect(filesContaining(sessions(), MARK)).toEqual([]);

    const opened = tidemark(['show', 'm1'], withKeys(K1));
    expect(opened.status, opened.stderr).toBe(0);
    expect(opened.stdout).toContain(`${MARK} title`);
    expect(opened.stdout).toContain(`${MARK} output`);

    const shut = tidemark(['show', 'm1']);
    expect(shut.status, shut.stderr).toBe(0);
    expect(shut.stdout).not.toContain(MARK);
    expect(shut.stdout).not.toContain('ts1.');
    expect(shut.stdout).toMatch(/title\s+sealed/);
    expect(shut.stdout).toMatch(/user: sealed/);
    expect(shut.stdout).toContain('under key k1');

    const json = JSON.parse(tidemark(['show', 'm1', '--json']).stdout) as {
      summary: { title: string; tags: string[]; cwd: string };
      sealedWith: string[];
      events: { data: unknown }[];
    };
    expect(json.summary).toMatchObject({ title: 'sealed', tags: ['kept'], cwd: '/work/app' });
    expect(json.sealedWith).toEqual(['k1']);
    expect(json.events.map((e) => e.data)).toEqual(['sealed', 'sealed', 'sealed']);

    expect(tidemark(['list']).stdout).toMatch(/m1 .* sealed/);
    expect(tidemark(['list'], withKeys(K1)).stdout).toContain(`${MARK} title`);
  });

  it('reads keys from --keys FILE (comments and one entry a line), before TIDEMARK_KEYS', () => {
    tidemark(['import'], { input: markedExport('m2'), ...withKeys(K1) });
    const file = join(home(), 'tidemark.keys');
    writeFileSync(file, `# rotated today\n${K2}\n\n${K1}  # the old one\n`, { mode: 0o600 });
    const run = tidemark(['show', 'm2', '--keys', file], withKeys(K2));
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain(`${MARK} title`);
  });

  it('fails, naming session and seq, when the keys given do not open the store', () => {
    tidemark(['import'], { input: markedExport('m3'), ...withKeys(K1) });
    const run = tidemark(['show', 'm3'], withKeys(K2));
    expectOneErrorLine(run, 'CORRUPT', 7);
    expect(run.stderr).toContain('m3');
    expect(run.stderr).toContain('k1');
  });

  it('refuses a plaintext import beside sealed sessions without keys, and seals it with keys', () => {
    tidemark(['import'], { input: markedExport('m4'), ...withKeys(K1) });
    const refused = tidemark(['import'], { input: markedExport('plain') });
    expectOneErrorLine(refused, 'INVALID', 6);
    expect(refused.stderr).toContain('sealed');
    expect(tidemark(['show', 'plain']).status).toBe(3);
    expect(tidemark(['import'], { input: markedExport('plain'), ...withKeys(K1) }).status).toBe(0);
    expect(filesContaining(sessions(), MARK)).toEqual([]);
  });

  it('exports as stored by default and plaintext with --decrypt; a sealed export imports without keys', () => {
    tidemark(['import'], { input: markedExport('m5'), ...withKeys(K1) });
    const sealed = tidemark(['export', 'm5']);
    expect(sealed.status, sealed.stderr).toBe(0);
    expect(sealed.stdout).not.toContain(MARK);
    expect(sealed.stdout).toContain('"tidemark:sealed":"ts1.k1.');
    expectOneErrorLine(tidemark(['export', 'm5', '--decrypt']), 'USAGE', 2);
    const plain = tidemark(['export', 'm5', '--decrypt'], withKeys(K1));
    expect(plain.stdout).toContain(`${MARK} output`);

    // Into another store, without keys: copied as it is, and it opens there with the key.
    const other = `jsonl:${join(home(), 'other')}`;
    expect(tidemark(['--store', other, 'import'], { input: sealed.stdout }).status).toBe(0);
    expect(tidemark(['--store', other, 'show', 'm5'], withKeys(K1)).stdout).toContain(`${MARK} output`);
    // Under another id its records would not authenticate: that needs keys to re-seal.
    expectOneErrorLine(
      tidemark(['--store', other, 'import', '--id', 'm6'], { input: sealed.stdout }),
      'USAGE',
      2,
    );
    const renamed = tidemark(['--store', other, 'import', '--id', 'm6'], {
      input: sealed.stdout,
      ...withKeys(K1),
    });
    expect(renamed.status, renamed.stderr).toBe(0);
    expect(tidemark(['--store', other, 'show', 'm6'], withKeys(K1)).stdout).toContain(`${MARK} output`);
  });

  it('migrate --seal seals a plaintext store, --unseal gives it back, verified', () => {
    const plain = `jsonl:${join(home(), 'plain')}`;
    const sealedDir = join(home(), 'sealed');
    const back = `jsonl:${join(home(), 'back')}`;
    for (const id of ['p1', 'p2']) tidemark(['--store', plain, 'import'], { input: markedExport(id) });
    expectOneErrorLine(
      tidemark(['migrate', '--from', plain, '--to', `jsonl:${sealedDir}`, '--seal']),
      'USAGE',
      2,
    );
    expectOneErrorLine(
      tidemark(
        ['migrate', '--from', plain, '--to', `jsonl:${sealedDir}`, '--seal', '--unseal'],
        withKeys(K1),
      ),
      'USAGE',
      2,
    );
    const seal = tidemark(['migrate', '--from', plain, '--to', `jsonl:${sealedDir}`, '--seal'], withKeys(K1));
    expect(seal.status, seal.stderr).toBe(0);
    expect(filesContaining(sealedDir, MARK)).toEqual([]);
    const unseal = tidemark(
      ['migrate', '--from', `jsonl:${sealedDir}`, '--to', back, '--unseal'],
      withKeys(K1),
    );
    expect(unseal.status, unseal.stderr).toBe(0);
    for (const id of ['p1', 'p2']) {
      expect(tidemark(['--store', back, 'export', id]).stdout.split('\n').slice(1)).toEqual(
        markedExport(id).split('\n').slice(1),
      );
    }
    // --unseal refuses a plaintext source: CORRUPT (for its sessions, or the whole listing,
    // whichever the sealed view reports), never a plaintext copy reported as unsealed.
    const wrong = tidemark(
      ['migrate', '--from', plain, '--to', `jsonl:${join(home(), 'x')}`, '--unseal'],
      withKeys(K1),
    );
    expect([1, 7]).toContain(wrong.status);
    expect(wrong.stderr).toContain('CORRUPT');
    expect(wrong.stdout).not.toMatch(/migrated [1-9]/);
  });

  it('rekey re-seals every session under the current key and names the key that can be retired', () => {
    for (const id of ['r1', 'r2', 'r3']) tidemark(['import'], { input: markedExport(id), ...withKeys(K1) });
    expectOneErrorLine(tidemark(['rekey']), 'USAGE', 2);
    expectOneErrorLine(
      tidemark(['rekey', '--staging', `jsonl:${sessions()}`], withKeys(`${K2},${K1}`)),
      'USAGE',
      2,
    );
    const run = tidemark(['rekey'], withKeys(`${K2},${K1}`));
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('3 re-sealed, 0 already current, 0 changed (retry later), 0 failed');
    expect(run.stdout).toContain('retirable: k1');
    // k1 is gone from the keyring and everything still opens.
    expect(tidemark(['show', 'r2'], withKeys(K2)).stdout).toContain(`${MARK} output`);
    const again = JSON.parse(tidemark(['rekey', '--json'], withKeys(K2)).stdout) as Record<string, unknown>;
    expect(again).toMatchObject({ alreadyCurrent: ['r1', 'r2', 'r3'], complete: true, keysInUse: { k2: 3 } });
    expect(filesContaining(home(), MARK)).toEqual([]);
  });

  it('rekey keeps a key that a session in the trash uses from retirement, and the trashed session restores', () => {
    for (const id of ['t1', 't2']) tidemark(['import'], { input: markedExport(id), ...withKeys(K1) });
    expect(tidemark(['delete', 't2']).status).toBe(0);
    const run = tidemark(['rekey'], withKeys(`${K2},${K1}`));
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/trash .*: 1 session\(s\) under k1, kept as they are/);
    expect(run.stdout).toContain('retirable: none');
    const json = JSON.parse(tidemark(['rekey', '--json'], withKeys(`${K2},${K1}`)).stdout) as Record<
      string,
      unknown
    >;
    expect(json).toMatchObject({
      complete: true,
      retirable: [],
      trash: { sessions: 1, keysInUse: { k1: 1 } },
    });
    // Restored and re-sealed, k1 is free.
    expect(tidemark(['trash', 'restore', 't2']).status).toBe(0);
    const after = JSON.parse(tidemark(['rekey', '--json'], withKeys(`${K2},${K1}`)).stdout) as Record<
      string,
      unknown
    >;
    expect(after).toMatchObject({ complete: true, resealed: ['t2'], retirable: ['k1'] });
    expect(tidemark(['show', 't2'], withKeys(K2)).stdout).toContain(`${MARK} output`);
  });

  it('rekey exits 1 and names a session it cannot open, and re-seals the others', () => {
    tidemark(['import'], { input: markedExport('ok1'), ...withKeys(K1) });
    const stranger = `k9:${Buffer.alloc(32, 9).toString('base64')}`;
    tidemark(['import'], { input: markedExport('alien'), ...withKeys(stranger) });
    const run = tidemark(['rekey'], withKeys(`${K2},${K1}`));
    expect(run.status).toBe(1);
    expect(run.stdout).toContain('1 re-sealed');
    expect(run.stdout).toContain('retirable: none yet');
    expect(run.stderr).toMatch(/failed: alien: CORRUPT: .*k9/);
  });
});
