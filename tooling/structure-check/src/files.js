// @ts-check
// Finding the files the checks read. Node 20 has no fs.glob, and the layout is fixed
// (packages/<name>/src/**), so a small walk is enough.
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/**
 * Every file under `dir` (recursively) whose name passes `keep`, as paths relative to `root`
 * with forward slashes, sorted. node_modules and dist are never entered.
 * @param {string} root
 * @param {string} dir
 * @param {(name: string) => boolean} keep
 * @returns {string[]}
 */
export function walk(root, dir, keep) {
  /** @type {string[]} */
  const found = [];
  /** @param {string} at */
  const visit = (at) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist') continue;
      const path = join(at, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.isFile() && keep(entry.name)) found.push(relative(root, path).split(sep).join('/'));
    }
  };
  visit(dir);
  return found.sort();
}

/**
 * The package folders under `root/packages` (names only), sorted.
 * @param {string} root
 * @returns {string[]}
 */
export function packageNames(root) {
  const packages = join(root, 'packages');
  return readdirSync(packages)
    .filter((name) => statSync(join(packages, name)).isDirectory())
    .sort();
}

/**
 * The TypeScript sources of every package: packages/<name>/src/**\/*.ts (declaration files excluded).
 * @param {string} root
 * @returns {string[]}
 */
export function packageSources(root) {
  return packageNames(root).flatMap((name) => {
    const src = join(root, 'packages', name, 'src');
    try {
      if (!statSync(src).isDirectory()) return [];
    } catch {
      return [];
    }
    return walk(root, src, (file) => file.endsWith('.ts') && !file.endsWith('.d.ts'));
  });
}
