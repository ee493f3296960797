// @ts-check
// Copies between packages that should share code through @tidemark/core instead. jscpd finds
// every repeated block (config: .jscpd.json); only pairs across the gated package boundaries fail:
// backend with backend, or backend with cli or lifecycle. A repeat inside one package, or in a test
// kit, is reported for information and not gated.

/** The storage backends. */
export const backendPackages = ['memory', 'jsonl', 'sqlite', 'postgres'];
/** Packages that must not carry a copy of backend code either. */
export const backendNeighbours = ['cli', 'lifecycle'];

/**
 * @typedef {object} CloneSide
 * @property {string} name path of the file, relative to the repository root
 * @property {number} start
 * @property {number} [end]
 */
/**
 * @typedef {object} Clone
 * @property {number} lines
 * @property {number} [tokens]
 * @property {CloneSide} firstFile
 * @property {CloneSide} secondFile
 */

/**
 * The package a repository path belongs to (`packages/<name>/…`), if any.
 * @param {string} path
 */
export function packageOf(path) {
  const match = /(?:^|\/)packages\/([^/]+)\//.exec(path.replaceAll('\\', '/'));
  return match?.[1];
}

/**
 * Whether a block repeated between these two packages is gated.
 * @param {string | undefined} a
 * @param {string | undefined} b
 */
export function isGatedPair(a, b) {
  if (a === undefined || b === undefined || a === b) return false;
  const aBackend = backendPackages.includes(a);
  const bBackend = backendPackages.includes(b);
  if (aBackend && bBackend) return true;
  return (aBackend && backendNeighbours.includes(b)) || (bBackend && backendNeighbours.includes(a));
}

/**
 * Splits jscpd's duplicates into the gated ones and the rest.
 * @param {Clone[]} clones
 * @returns {{ gated: Clone[]; other: Clone[] }}
 */
export function classifyClones(clones) {
  /** @type {Clone[]} */
  const gated = [];
  /** @type {Clone[]} */
  const other = [];
  for (const clone of clones) {
    const pair = isGatedPair(packageOf(clone.firstFile.name), packageOf(clone.secondFile.name));
    (pair ? gated : other).push(clone);
  }
  return { gated, other };
}

/** @param {Clone} clone */
export function formatClone(clone) {
  // Start lines only: jscpd's `end` of the second file is sometimes far past the block.
  return `${clone.firstFile.name}:${clone.firstFile.start} = ${clone.secondFile.name}:${clone.secondFile.start} (${clone.lines} lines)`;
}
