// Child-process tests run plain Node on the built package (Node 20 cannot run TypeScript), so
// core, the backends the host processes open and this package must be built. Under `turbo test` the build already ran; rebuilding then would
// rewrite dist files that other packages' child processes may be reading, so build only what is
// missing or older than its sources.
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function isStale(pkg: string): boolean {
  try {
    return statSync(join(pkg, 'dist', 'index.js')).mtimeMs < newestMtime(join(pkg, 'src'));
  } catch {
    return true; // no build yet
  }
}

export default function setup(): void {
  const here = dirname(fileURLToPath(import.meta.url));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  for (const pkg of ['core', 'jsonl', 'sqlite', 'postgres', 'adk'].map((name) => join(here, '../..', name))) {
    if (isStale(pkg))
      execFileSync(process.execPath, [tsc, '-p', join(pkg, 'tsconfig.build.json')], { stdio: 'inherit' });
  }
}
