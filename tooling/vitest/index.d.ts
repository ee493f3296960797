import type { UserConfig } from 'vitest/config';
/** The shared vitest preset, merged with `overrides`. */
export function tidemarkVitest(overrides?: UserConfig): UserConfig;

/** True when `pkg` (a package directory) has no `dist/index.js` or one older than a file under `src/`. */
export function isStale(pkg: string): boolean;

/**
 * Builds (`tsc -p tsconfig.build.json`) each of `packages` that {@link isStale}, in the order given
 * (list dependencies first), for tests that run built code in child processes. Package paths are
 * relative to the directory of `from` (pass the global setup's `import.meta.url`), and TypeScript
 * is resolved from `from` too. Up-to-date packages are left alone, so a build under way elsewhere
 * (turbo) is not rewritten under its readers. Returns the directories it built.
 */
export function buildStalePackages(from: string | URL, packages: readonly string[]): string[];
