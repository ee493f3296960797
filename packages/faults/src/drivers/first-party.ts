/**
 * The backends of this project, each a package exporting `./harness` (`@tidemark/<name>/harness`),
 * the names `--backends` takes.
 */
export const FIRST_PARTY_BACKENDS = ['memory', 'jsonl', 'sqlite', 'postgres'] as const;
