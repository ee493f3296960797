// `@tidemark/jsonl/harness`: the JSONL backend as a driver of the storage-fault harness
// (`tidemark harness --backends jsonl` loads this module, as `--driver` loads a third party's).
// It needs `@tidemark/faults` only for its types: the harness calls it, not the other way round.
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { StoreOptions } from '@tidemark/core';
import { builtFile, type FsHarnessDriver, type FsLayout } from '@tidemark/faults';
import { openJsonlStore } from './index.js';

/** JSONL's files: `<bucket>/<id>.jsonl` logs, `<root>/.quarantine/` (dot files are catalogs and temp files). */
export const JSONL_LAYOUT: FsLayout = {
  isLog: (path) =>
    path.endsWith('.jsonl') && !basename(path).startsWith('.') && !path.includes('/.quarantine/'),
  isQuarantine: (path) => path.includes('/.quarantine/'),
  // A log only grows at its end: every byte a recovery takes out is its former tail.
  logs: 'append',
};

/**
 * `@tidemark/jsonl` as an fs-kind driver (FaultyFs and CrashFs sweeps, real faults). The child
 * processes of the real faults import this package's built `dist/index.js`.
 */
export function jsonlDriver(options: StoreOptions = {}): FsHarnessDriver {
  return {
    name: 'jsonl',
    kind: 'fs',
    durabilities: ['strict', 'relaxed'],
    layout: JSONL_LAYOUT,
    // A sweep fails the N-th storage operation of a run and expects every run (and its replay)
    // to make the same ones: a writer released after 250 ms idle would add operations whenever
    // the machine is slow, so the in-memory sweeps keep writers held (`lockIdleMs: Infinity`,
    // unless the caller sets it). The release itself is swept across processes by the real
    // faults, whose children open the store with its defaults.
    open: ({ fs, root, durability }) =>
      openJsonlStore({
        lockIdleMs: Number.POSITIVE_INFINITY,
        ...options,
        ...(durability !== undefined && { durability }),
        root,
        fs,
      }),
    real: {
      location: 'dir',
      module: pathToFileURL(builtFile(import.meta.url, 'index.js')).href,
      factory: 'openJsonlStore',
      options: (root) => ({ root }),
    },
  };
}

/** The harness loads the default export: the driver with the backend's default options. */
export default jsonlDriver;
