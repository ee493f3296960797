// Child-process tests run plain Node on built packages (Node 20 cannot run TypeScript), so a
// global setup builds what they load. Under `turbo test` the build already ran; rebuilding then
// would rewrite dist files that other packages' child processes may be reading, so only what is
// missing or older than its sources is built.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = resolve(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

const BUNDLE = fileURLToPath(new URL('../bundle.mjs', import.meta.url));

/**
 * The arguments the package's `build` script gives tooling/bundle.mjs, or undefined when it does
 * not bundle: the stale build does what the package's own build does after tsc.
 * @param {string} pkg
 * @returns {string[] | undefined}
 */
function bundleArgsOf(pkg) {
  let script;
  try {
    script = JSON.parse(readFileSync(resolve(pkg, 'package.json'), 'utf8')).scripts?.build;
  } catch {
    return undefined;
  }
  const match = typeof script === 'string' ? /tooling\/bundle\.mjs((?: +[\w./-]+)*)/.exec(script) : null;
  return match === null ? undefined : match[1].split(' ').filter(Boolean);
}

/** @param {string} pkg */
export function isStale(pkg) {
  try {
    return statSync(resolve(pkg, 'dist', 'index.js')).mtimeMs < newestMtime(resolve(pkg, 'src'));
  } catch {
    return true; // no build yet
  }
}

/**
 * @param {string | URL} from
 * @param {readonly string[]} packages
 */
export function buildStalePackages(from, packages) {
  const file = from instanceof URL || from.startsWith('file:') ? fileURLToPath(from) : from;
  // TypeScript is the caller's devDependency, so it is resolved from the caller's file.
  const tsc = createRequire(file).resolve('typescript/bin/tsc');
  const built = [];
  for (const pkg of packages.map((relative) => resolve(dirname(file), relative))) {
    if (!isStale(pkg)) continue;
    execFileSync(process.execPath, [tsc, '-p', resolve(pkg, 'tsconfig.build.json')], { stdio: 'inherit' });
    const bundleArgs = bundleArgsOf(pkg);
    if (bundleArgs !== undefined)
      execFileSync(process.execPath, [BUNDLE, ...bundleArgs], { cwd: pkg, stdio: 'inherit' });
    built.push(pkg);
  }
  return built;
}
