// Packs @tidemark/core and @tidemark/memory as they would be published, installs the tarballs into
// an empty project with npm (no workspace, no source condition) and uses them from plain Node ESM.
// Turbo builds both packages before this test runs (they are devDependencies of this package).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const repo = resolve(import.meta.dirname, '../../..');
const work = mkdtempSync(join(tmpdir(), 'tidemark-pack-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

describe('published packages', () => {
  it('pack, install with npm into an empty project, and work', () => {
    const tarballs = join(work, 'tarballs');
    for (const pkg of ['core', 'memory']) {
      run('pnpm', ['pack', '--pack-destination', tarballs], join(repo, 'packages', pkg));
    }
    const files = readdirSync(tarballs).sort();
    expect(files).toHaveLength(2);
    const listings = new Map(files.map((file) => [file, run('tar', ['-tzf', join(tarballs, file)], work)]));
    for (const listing of listings.values()) {
      expect(listing).toContain('package/dist/index.js');
      expect(listing).toContain('package/dist/index.d.ts');
      expect(listing).not.toContain('package/test/');
    }
    // "Writing a backend" is complete from the tarballs: the guide ships in core, and the worked
    // example it points to (the memory store's source) in memory, and no other source file.
    const core = listings.get(files.find((f) => f.includes('core'))!)!;
    const memory = listings.get(files.find((f) => f.includes('memory'))!)!;
    expect(core).toContain('package/docs/writing-a-backend.md');
    expect(core).not.toContain('package/src/');
    expect(memory.split('\n').filter((line) => line.startsWith('package/src/'))).toEqual([
      'package/src/store.ts',
    ]);

    const app = join(work, 'app');
    run('mkdir', ['-p', app], work);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    run('npm', ['install', '--no-audit', '--no-fund', ...files.map((f) => join(tarballs, f))], app);
    writeFileSync(
      join(app, 'main.mjs'),
      `import { openMemoryStore } from '@tidemark/memory';
import { isTidemarkError } from '@tidemark/core';
const store = await openMemoryStore();
const meta = await store.create({ cwd: '/project' });
const time = new Date().toISOString();
await store.append(meta.id, [{ seq: 0, type: 'user/message', time, data: { text: 'hello' } },
                             { seq: 1, type: 'turn/end', time, data: null }]);
const loaded = await store.load(meta.id);
let code;
try { await store.load('missing'); } catch (e) { code = isTidemarkError(e) ? e.code : 'untyped'; }
console.log(JSON.stringify({ events: loaded.events.length, committed: loaded.committedSeq, prompt: loaded.summary.firstPrompt, code }));
`,
    );
    const out = JSON.parse(run('node', ['main.mjs'], app));
    expect(out).toEqual({ events: 2, committed: 1, prompt: 'hello', code: 'NOT_FOUND' });
  });
});
