// The options every backend factory accepts, validated once here so that every backend rejects the
// same bad option with the same INVALID message, naming the option.
import { type BoundaryPredicate, boundaryPredicate, DEFAULT_BOUNDARY_TYPES } from './boundary.js';
import { TidemarkError } from './errors.js';
import type { EventLimits } from './event.js';
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_EVENT_BYTES, loneSurrogateIndex } from './json.js';
import type { Durability, StoreOptions } from './store.js';

/** {@link StoreOptions} after validation, with every default filled in. */
export interface ResolvedStoreOptions {
  durability: Durability;
  /** A frozen copy of the boundary types. */
  boundaryTypes: readonly string[];
  /** Built from {@link ResolvedStoreOptions.boundaryTypes}. */
  isBoundary: BoundaryPredicate;
  /** Both limits, defaults filled in; pass to `prepareBatch`. */
  limits: Required<EventLimits>;
}

function invalid(where: string, message: string): TidemarkError {
  return new TidemarkError('INVALID', `${where}: ${message}`);
}

function positiveInteger(value: unknown, name: string, where: string, max?: number): number {
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value < 1 ||
    (max !== undefined && value > max)
  ) {
    const range = max === undefined ? 'a positive integer' : `an integer from 1 to ${max}`;
    throw invalid(where, `${name} must be ${range}, got ${String(value)}`);
  }
  return value;
}

function boundaryTypesOf(value: unknown, where: string): readonly string[] {
  if (value === undefined) return DEFAULT_BOUNDARY_TYPES;
  if (!Array.isArray(value)) throw invalid(where, 'boundaryTypes must be an array of strings');
  value.forEach((type: unknown, i) => {
    if (typeof type !== 'string' || type === '')
      throw invalid(where, `boundaryTypes[${i}] must be a non-empty string`);
    if (loneSurrogateIndex(type) !== -1)
      throw invalid(where, `boundaryTypes[${i}] must be well-formed Unicode text`);
  });
  return Object.freeze([...(value as string[])]);
}

/** The names of the options every backend shares ({@link StoreOptions}); the type keeps it complete. */
export const SHARED_OPTION_NAMES: readonly string[] = Object.freeze(
  Object.keys({
    durability: true,
    boundaryTypes: true,
    maxEventBytes: true,
    maxDepth: true,
  } satisfies Record<keyof StoreOptions, true>),
);

/**
 * The option names a backend adds to {@link StoreOptions}, from an object with one key per name:
 * the type makes the list complete, so a new option cannot be left out of it (and then refused).
 * @example `const NAMES = backendOptionNames<MyOptions>({ root: true, fs: true })`
 */
export function backendOptionNames<T extends StoreOptions>(
  names: Record<Exclude<keyof T, keyof StoreOptions>, true>,
): readonly string[] {
  return Object.freeze(Object.keys(names));
}

/**
 * Refuses an option name that neither {@link StoreOptions} nor the backend (`backendNames`) knows:
 * a misspelt `root` or `path` must not quietly open a store somewhere else (the default root, a
 * new file) and leave the caller's sessions looking absent.
 */
function assertKnownNames(options: object, where: string, backendNames: readonly string[]): void {
  for (const name of Object.keys(options)) {
    if (SHARED_OPTION_NAMES.includes(name) || backendNames.includes(name)) continue;
    const known = [...backendNames, ...SHARED_OPTION_NAMES].join(', ');
    throw invalid(where, `unknown option ${JSON.stringify(name)} (known options: ${known})`);
  }
}

/**
 * Validates the options every backend shares and fills in their defaults. Backend-specific options
 * (a path, a volume, a hook) are the backend's to validate.
 * @param where - the factory's name, prefixed to messages (`openMemoryStore`).
 * @param backendNames - the backend's own option names. When given, any other name that is not
 *   shared is refused; when omitted, names this function does not know are left alone.
 * @throws TidemarkError INVALID naming the offending option.
 */
export function resolveStoreOptions(
  options: StoreOptions,
  where: string,
  backendNames?: readonly string[],
): ResolvedStoreOptions {
  if (typeof options !== 'object' || options === null) throw invalid(where, 'options must be an object');
  if (backendNames !== undefined) assertKnownNames(options, where, backendNames);
  const { durability = 'strict', maxEventBytes, maxDepth } = options;
  if (durability !== 'strict' && durability !== 'relaxed')
    throw invalid(where, `durability must be 'strict' or 'relaxed', got ${JSON.stringify(durability)}`);
  const boundaryTypes = boundaryTypesOf(options.boundaryTypes, where);
  const limits: Required<EventLimits> = {
    // The largest event every backend can store (JSONL's reader caps a line at this).
    maxEventBytes:
      maxEventBytes === undefined
        ? DEFAULT_MAX_EVENT_BYTES
        : positiveInteger(maxEventBytes, 'maxEventBytes', where, DEFAULT_MAX_EVENT_BYTES),
    maxDepth: maxDepth === undefined ? DEFAULT_MAX_DEPTH : positiveInteger(maxDepth, 'maxDepth', where),
  };
  return { durability, boundaryTypes, isBoundary: boundaryPredicate(boundaryTypes), limits };
}
