// Store addresses as users type them: `~/` is their home, a relative path is resolved where it
// was typed (also when saved with `config --set-store`), a postgres URL is kept whole.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { exportLines, home, tidemark, useTempHome } from './run-cli.js';

const unavailable = inject('unavailable');
useTempHome();

describe.skipIf(unavailable.jsonl !== undefined || unavailable.sqlite !== undefined)(
  'store addresses',
  () => {
    // Regression: sqlite:~/s.db created a directory named "~" in the working directory.
    it('expand ~/ to $HOME (sqlite:~/s.db, migrate --from jsonl:~/sessions) instead of creating ./~/', () => {
      const userHome = join(home(), 'me');
      const work = join(home(), 'work');
      mkdirSync(userHome);
      mkdirSync(work);
      const env = { HOME: userHome };
      const imported = tidemark(['--store', 'sqlite:~/s.db', 'import'], {
        input: exportLines('t1'),
        cwd: work,
        env,
      });
      expect(imported.status).toBe(0);
      expect(existsSync(join(userHome, 's.db'))).toBe(true);
      expect(existsSync(join(work, '~'))).toBe(false);
      const migrated = tidemark(
        ['migrate', '--from', 'sqlite:~/s.db', '--to', 'jsonl:~/sessions', '--json'],
        {
          cwd: work,
          env,
        },
      );
      expect(migrated.status).toBe(0);
      expect(JSON.parse(migrated.stdout)).toMatchObject({
        from: `sqlite:${join(userHome, 's.db')}`,
        to: `jsonl:${join(userHome, 'sessions')}`,
        copied: 1,
      });
      const listed = tidemark(['--store', 'jsonl:~/sessions', 'list', '--json'], { cwd: work, env });
      expect(JSON.parse(listed.stdout).sessions.map((s: { id: string }) => s.id)).toEqual(['t1']);
      expect(existsSync(join(work, '~'))).toBe(false);
    });
  },
);

describe.skipIf(unavailable.sqlite !== undefined)('config --set-store', () => {
  // Regression: a relative address was saved as typed, naming a new empty store in every other directory.
  it('stores a relative address resolved, so every directory uses the same store', () => {
    const proj = join(home(), 'proj');
    const other = join(home(), 'other');
    mkdirSync(proj);
    mkdirSync(other);
    const set = tidemark(['config', '--set-store', 'sqlite:data.db'], { cwd: proj });
    expect(set.status).toBe(0);
    const store = `sqlite:${join(proj, 'data.db')}`;
    expect(JSON.parse(readFileSync(join(home(), 'config.json'), 'utf8'))).toEqual({ store });
    expect(tidemark(['import'], { input: exportLines('c1'), cwd: proj }).status).toBe(0);
    const listed = tidemark(['list', '--json'], { cwd: other });
    expect(listed.status).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({ store, sessions: [{ id: 'c1' }] });
    expect(tidemark(['show', 'c1'], { cwd: other }).status).toBe(0);
    expect(existsSync(join(other, 'data.db'))).toBe(false);
  });

  // Regression: the display form (password masked) must not be what is saved.
  it('keeps a postgres URL as typed (its display form hides the password)', () => {
    const url = 'postgres://u:secret@db.example/sessions';
    expect(tidemark(['config', '--set-store', url]).status).toBe(0);
    expect(JSON.parse(readFileSync(join(home(), 'config.json'), 'utf8'))).toEqual({ store: url });
  });
});
