// Run by each package's `build` after tsc, in the package's directory: bundles the JavaScript tsc
// emitted into dist/ into one ES module per entry point (plus shared chunks when two entries share
// code), so that importing a package loads a few files instead of one per source file. Node 20's
// ES module loader pays about 0.8 ms per file (resolve, read, compile, link): importing
// @tidemark/core, @tidemark/sqlite and @tidemark/langgraph took 45–55 ms as 55 files and 13 ms
// bundled, which a new process (a serverless function, a new worker, each CLI command) pays
// before its first read.
//
// Entry points: the `default` targets of package.json `exports`, its `bin` files, and every file
// the code starts as a child process by path (`builtFile(import.meta.url, '<file>')`, see
// @tidemark/faults). Imports of other packages (`@tidemark/*` included, so that every package
// shares one copy of core) and of node: modules stay imports. The declaration files tsc emitted
// stay as they are (they describe the same exports); the .js files it emitted are replaced by the
// bundles, so a deep import of an internal file fails instead of loading a second copy of it.
//
//   node ../../tooling/bundle.mjs [<file under dist/> ...]
import { existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { build } from 'esbuild';

const pkgDir = process.cwd();
const dist = join(pkgDir, 'dist');
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));

/** The .js files tsc emitted: those with a declaration file beside them (not, e.g., dist/web). */
function emittedFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...emittedFiles(path));
    else if (entry.name.endsWith('.js') && existsSync(`${path.slice(0, -3)}.d.ts`)) out.push(path);
  }
  return out;
}

/** Targets under dist/ of the package's exports (their `default` condition) and bins. */
function declaredEntries() {
  const targets = [];
  const visit = (value) => {
    if (typeof value === 'string') targets.push(value);
    else if (value !== null && typeof value === 'object') {
      if (typeof value.default === 'string') targets.push(value.default);
      else for (const nested of Object.values(value)) visit(nested);
    }
  };
  visit(pkg.exports ?? {});
  if (typeof pkg.bin === 'string') targets.push(pkg.bin);
  else for (const bin of Object.values(pkg.bin ?? {})) targets.push(bin);
  return targets.map((t) => resolve(pkgDir, t)).filter((t) => t.startsWith(dist + sep) && t.endsWith('.js'));
}

/** Files under dist/ that the code starts by path with `builtFile(import.meta.url, '<file>')`. */
function childEntries(files) {
  const found = [];
  for (const file of files) {
    for (const match of readFileSync(file, 'utf8').matchAll(/builtFile\(import\.meta\.url, '([^']+)'\)/g))
      found.push(join(dist, match[1]));
  }
  return found;
}

const emitted = emittedFiles(dist);
// Files named on the command line (paths under dist/) are entry points too: internals that the
// package's own benchmarks import by path, sharing the bundle's chunks (one copy of each module).
const named = process.argv.slice(2).map((file) => join(dist, file));
const entries = [...new Set([...declaredEntries(), ...childEntries(emitted), ...named])];
const missing = entries.filter((e) => !emitted.includes(e));
if (missing.length > 0) {
  console.error(
    `bundle: entry points not emitted by tsc: ${missing.map((m) => relative(pkgDir, m)).join(', ')}`,
  );
  process.exit(1);
}

// Bundled into a directory beside dist, then moved in once the build succeeded: a failed bundle
// leaves tsc's output, which works as it is.
const out = join(pkgDir, '.bundle');
rmSync(out, { recursive: true, force: true });
const result = await build({
  entryPoints: entries,
  outbase: dist,
  outdir: out,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  // No keepNames: it wraps every function and class in a __name() call that defines its `name`
  // at run time, closures included, each time one is made (5% of a sealed append's CPU). Without
  // minifying, esbuild renames only identifiers that collide across modules; an export renamed so
  // (its `name` would show the suffix) fails the build below.
  chunkNames: 'chunk-[hash]',
  logLevel: 'warning',
  metafile: true,
});
// The directories tsc made stay, holding declarations alone where no entry was: the .d.ts files
// import one another by their .js names, which is how TypeScript finds them.
// `export { Thing2 as Thing }`: a class or function whose `name` is no longer what it is exported as.
const renamed = [];
for (const file of Object.keys(result.metafile.outputs)) {
  const text = readFileSync(resolve(pkgDir, file), 'utf8');
  for (const match of text.matchAll(/\b([A-Za-z_$][\w$]*?)(\d+) as ([A-Za-z_$][\w$]*)\b/g))
    if (match[1] === match[3]) renamed.push(`${match[3]} (${relative(out, resolve(pkgDir, file))})`);
}
if (renamed.length > 0) {
  rmSync(out, { recursive: true, force: true });
  console.error(`bundle: exports renamed by the bundler (their name shows a suffix): ${renamed.join(', ')}`);
  process.exit(1);
}
for (const file of emitted) rmSync(file);
for (const name of readdirSync(dist)) if (/^chunk-\w+\.js$/.test(name)) rmSync(join(dist, name));
for (const file of Object.keys(result.metafile.outputs)) {
  const from = resolve(pkgDir, file);
  const to = join(dist, relative(out, from));
  renameSync(from, to);
}
rmSync(out, { recursive: true, force: true });
