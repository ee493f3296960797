/**
 * @packageDocumentation
 * The tidemark command line as a library: `main(argv, io)` runs a command and returns its exit
 * status; the address parser and the export format are reusable.
 */
export { defaultStoreAddress, parseStoreAddress, type StoreAddress, tidemarkHome } from './address.js';
export { type Backend, openBackend } from './backends.js';
export { main } from './cli.js';
export type { VerifyFinding } from './commands/verify.js';
export type { CliConfig, Io } from './context.js';
export {
  EXPORT_FORMAT,
  EXPORT_VERSION,
  type ExportHeader,
  encodeExportEvent,
  encodeExportHeader,
  type ParsedExport,
  parseExport,
} from './exchange.js';
export { type CliCode, CliError, describeFailure, EXIT_CODES } from './exit-codes.js';
export { LIST_HEADER, makeStyle, progressBar, renderTable, renderTimeline, type Style } from './format.js';
