// Shared Stryker preset for `pnpm mutate`: each package mutates only its pure modules and runs only
// the fast unit tests that exercise them (a dedicated vitest.mutate.config.ts), so a run fits on
// a small shared machine. Not part of `pnpm test`: see docs/mutation.md.

/**
 * @param {{ mutate: string[] }} options the package's files (or `file:line-line` ranges) to mutate
 * @returns {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export function strykerPreset({ mutate }) {
  return {
    // Stryker is installed at the workspace root; name the runner by path, because its plugin
    // discovery looks beside its own (pnpm-isolated) install, where the runner is not.
    plugins: [import.meta.resolve('@stryker-mutator/vitest-runner')],
    testRunner: 'vitest',
    vitest: { configFile: 'vitest.mutate.config.ts' },
    coverageAnalysis: 'perTest',
    mutate,
    // Re-runs test only the mutants whose code or covering tests changed since the last report.
    incremental: true,
    incrementalFile: 'reports/stryker-incremental.json',
    concurrency: 2,
    timeoutMS: 10_000,
    reporters: ['clear-text', 'progress', 'html', 'json'],
    htmlReporter: { fileName: 'reports/mutation/mutation.html' },
    jsonReporter: { fileName: 'reports/mutation/mutation.json' },
    clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
    thresholds: { high: 90, low: 85, break: null },
    tempDirName: '.stryker-tmp',
    cleanTempDir: 'always',
  };
}
