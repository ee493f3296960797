// Child-process tests run plain Node on the built package (Node 20 cannot run TypeScript), so
// build core and sqlite once before the run.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const here = dirname(fileURLToPath(import.meta.url));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  for (const pkg of [join(here, '../../core'), join(here, '..')]) {
    execFileSync(process.execPath, [tsc, '-p', join(pkg, 'tsconfig.build.json')], { stdio: 'inherit' });
  }
}
