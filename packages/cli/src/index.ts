/**
 * @packageDocumentation
 * The tidemark command line as a library: `main(argv, io)` runs a command and returns its exit
 * status; the address parser and the export format are reusable.
 */
export { defaultStoreAddress, parseStoreAddress, type StoreAddress, tidemarkHome } from './address.js';
export { type Backend, openBackend, type VerifyFinding, verifyByReading } from './backends.js';
export { type CliConfig, type Io, main } from './cli.js';
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
