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

/**
 * Validates the options every backend shares and fills in their defaults. Backend-specific options
 * (a path, a volume, a hook) are left to the backend and ignored here.
 * @param where - the factory's name, prefixed to messages (`openMemoryStore`).
 * @throws TidemarkError INVALID naming the offending option.
 */
export function resolveStoreOptions(options: StoreOptions, where: string): ResolvedStoreOptions {
  if (typeof options !== 'object' || options === null) throw invalid(where, 'options must be an object');
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
