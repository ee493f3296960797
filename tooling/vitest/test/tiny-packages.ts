// Tiny packages for the build tests: sources under src/, a tsconfig.build.json that emits dist/
// (with declarations, as the packages' builds do), and a package.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Writes a package of `files` (paths under src/) into `dir`; `pkg` is merged into its package.json. */
export function writeTinyPackage(dir: string, files: Record<string, string>, pkg: object = {}): string {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, 'src', file)), { recursive: true });
    writeFileSync(join(dir, 'src', file), text);
  }
  writeFileSync(
    join(dir, 'tsconfig.build.json'),
    JSON.stringify({
      compilerOptions: {
        outDir: 'dist',
        rootDir: 'src',
        module: 'es2022',
        target: 'es2022',
        declaration: true,
      },
      include: ['src'],
    }),
  );
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', ...pkg }));
  return dir;
}

/** The exports map of a package whose one entry point is dist/index.js. */
export const INDEX_EXPORTS = { exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } } };
