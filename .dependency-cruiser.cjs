// Import rules of packages/*/src, checked by `pnpm check:structure` (tooling/structure-check).
// The layering is the one docs/architecture.md draws. Workspace packages resolve through their
// "@tidemark/source" export condition to packages/<name>/src, so a rule can name the package by
// its folder whether it is imported by name or (wrongly) by a relative path.
//
// Not seen here, on purpose: @tidemark/faults loads the drivers it runs by a module name given at
// run time (`loadHarnessDriver`: `--backends jsonl` is `@tidemark/jsonl/harness`, `--driver` a path;
// `real.module` in real.ts and the child scripts). Those are not static imports, and that is the
// layering docs/architecture.md asks for: the harness sees a backend only through its driver, and
// each backend's driver (`src/harness.ts` or `src/harness/`) is the one module of it that may
// import @tidemark/faults.

/** The storage backends: each may import only @tidemark/core (its harness driver also faults). */
const backends = '(memory|jsonl|sqlite|postgres)';

/** A backend's harness driver: `src/harness.ts` or the folder `src/harness/`. */
const harnessDriver = `^packages/${backends}/src/harness(\\.ts$|/)`;

/** Database client libraries: only a backend (and its driver) talks to an engine. */
const engineClients = '(^|/)node_modules/(pg|pg-[^/]+|@types/pg|better-sqlite3|@types/better-sqlite3)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle inside a package: split the shared part into its own module.',
      from: { path: '^packages/[^/]+/src/' },
      to: { circular: true },
    },
    {
      name: 'core-imports-nothing-of-ours',
      severity: 'error',
      comment: 'docs/architecture.md: core depends on nothing of ours.',
      from: { path: '^packages/core/src/' },
      to: { path: '^(packages|tooling)/', pathNot: '^packages/core/' },
    },
    {
      name: 'backend-imports-only-core',
      severity: 'error',
      comment: 'docs/architecture.md: a backend depends on @tidemark/core only (its harness driver aside).',
      from: { path: `^packages/${backends}/src/`, pathNot: harnessDriver },
      to: { path: '^(packages|tooling)/', pathNot: ['^packages/$1/', '^packages/core/'] },
    },
    {
      name: 'backend-harness-imports-core-and-faults',
      severity: 'error',
      comment:
        "docs/architecture.md: a backend's harness driver (`./harness`) sits on its backend, core " +
        'and @tidemark/faults, an optional peer dependency; nothing else.',
      from: { path: harnessDriver },
      to: {
        path: '^(packages|tooling)/',
        pathNot: ['^packages/$1/', '^packages/core/', '^packages/faults/'],
      },
    },
    {
      name: 'contract-imports-no-backend-but-memory',
      severity: 'error',
      comment:
        'docs/architecture.md: the contract suite sees a backend only through a driver; the memory ' +
        'backend is the reference model it compares against (decision 0006).',
      from: { path: '^packages/contract/src/' },
      to: { path: '^packages/(jsonl|sqlite|postgres)/' },
    },
    {
      name: 'harness-core-imports-no-backend',
      severity: 'error',
      comment:
        "Issue 23: the fault harness loads every backend, ours and a third party's, through its " +
        "driver module; its core imports no backend package and no engine's client (pg, better-sqlite3).",
      from: { path: '^packages/faults/src/' },
      to: { path: [`^packages/${backends}/`, engineClients] },
    },
    {
      name: 'lifecycle-imports-only-core',
      severity: 'error',
      comment: 'docs/architecture.md: lifecycle sits on core and works over any SessionStore.',
      from: { path: '^packages/lifecycle/src/' },
      to: { path: '^(packages|tooling)/', pathNot: ['^packages/lifecycle/', '^packages/core/'] },
    },
    {
      name: 'sealed-imports-only-core',
      severity: 'error',
      comment: 'docs/contract.md §10: a sealed store wraps any SessionStore; it knows no backend.',
      from: { path: '^packages/sealed/src/' },
      to: { path: '^(packages|tooling)/', pathNot: ['^packages/sealed/', '^packages/core/'] },
    },
    {
      name: 'nothing-imports-cli',
      severity: 'error',
      comment: 'docs/architecture.md: cli sits on top of everything.',
      from: { path: '^packages/[^/]+/src/', pathNot: '^packages/cli/' },
      to: { path: '^packages/cli/' },
    },
    {
      name: 'cross-package-by-name',
      severity: 'error',
      comment: 'Import another package by its name (@tidemark/x), never by a relative path into it.',
      from: { path: '^packages/([^/]+)/src/' },
      to: { path: '^packages/', pathNot: '^packages/$1/', dependencyTypes: ['local'] },
    },
    {
      name: 'resolvable',
      severity: 'error',
      comment: 'An import that does not resolve would hide a layering violation from the rules above.',
      from: { path: '^packages/[^/]+/src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      conditionNames: ['@tidemark/source', 'import', 'node', 'default'],
      exportsFields: ['exports'],
      extensions: ['.ts', '.js', '.json'],
    },
    combinedDependencies: false,
    preserveSymlinks: false,
  },
};
