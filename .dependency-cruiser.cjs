// Import rules of packages/*/src, checked by `pnpm check:structure` (tooling/structure-check).
// The layering is the one docs/architecture.md draws. Workspace packages resolve through their
// "@tidemark/source" export condition to packages/<name>/src, so a rule can name the package by
// its folder whether it is imported by name or (wrongly) by a relative path.
//
// Not seen here, on purpose: @tidemark/faults loads the backends it drives by a module name given
// at run time (`import(specifier)` in drivers.ts, real.ts, child.ts). Those are not static imports,
// and that is the layering docs/architecture.md asks for: the test kits see a backend only through
// a driver.

/** The storage backends: each may import only @tidemark/core. */
const backends = '(memory|jsonl|sqlite|postgres)';

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
      comment: 'docs/architecture.md: a backend depends on @tidemark/core only.',
      from: { path: `^packages/${backends}/src/` },
      to: { path: '^(packages|tooling)/', pathNot: ['^packages/$1/', '^packages/core/'] },
    },
    {
      name: 'test-kits-import-no-backend-but-memory',
      severity: 'error',
      comment:
        'docs/architecture.md: contract and faults see a backend only through a driver; the memory ' +
        'backend is the reference model they compare against (decision 0006).',
      from: { path: '^packages/(contract|faults)/src/' },
      to: { path: '^packages/(jsonl|sqlite|postgres)/' },
    },
    {
      name: 'lifecycle-imports-only-core',
      severity: 'error',
      comment: 'docs/architecture.md: lifecycle sits on core and works over any SessionStore.',
      from: { path: '^packages/lifecycle/src/' },
      to: { path: '^(packages|tooling)/', pathNot: ['^packages/lifecycle/', '^packages/core/'] },
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
