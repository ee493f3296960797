// Child-process tests run the store from `dist` (Node 20 cannot run TypeScript), so build core
// and jsonl first when their sources are newer than their build.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packages = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function newestSource(dir: string): number {
  let newest = 0;
  for (const name of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, name.name);
    newest = Math.max(newest, name.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

export default function setup(): void {
  for (const pkg of ['core', 'jsonl']) {
    const dir = join(packages, pkg);
    const built = join(dir, 'dist', 'index.js');
    if (existsSync(built) && statSync(built).mtimeMs >= newestSource(join(dir, 'src'))) continue;
    execFileSync(process.execPath, [require_tsc(dir), '-p', 'tsconfig.build.json'], {
      cwd: dir,
      stdio: 'inherit',
    });
  }
}

function require_tsc(dir: string): string {
  return join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
}
