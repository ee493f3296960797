// Key rotation of a sealed store: `rekeyStore` and what it reports.
export {
  type RekeyFailure,
  type RekeyOptions,
  type RekeyOutcome,
  type RekeyProgress,
  type RekeyReport,
  type RekeyStep,
  rekeyStore,
} from './rekey.js';
