// Reads and checks the arguments of a history transaction before anything is stored: the envelope
// is read once (a getter cannot hand a retry different content), every item is encoded and
// checked against the SDK's item schema, and a failure names the field without showing content.
import { protocol } from '@openai/agents-core';
import { type JsonValue, TidemarkError } from '@tidemark/core';
import { decodeValue, digestOf, encodeValue } from './encoding.js';

/** A checked transaction, items encoded. */
export type CheckedTransaction =
  | { type: 'append_items'; items: JsonValue[] }
  | { type: 'replace_suffix'; expectedSuffix: JsonValue[]; replacement: JsonValue[] };

/** A checked `applyHistoryTransaction` call. */
export interface CheckedTransactionArgs {
  operationId: string;
  transaction: CheckedTransaction;
  /** Fingerprint of the transaction, recorded with the operation id. */
  digest: string;
}

function invalid(message: string): TidemarkError {
  return new TidemarkError('INVALID', `applyHistoryTransaction: ${message}`);
}

/** Reads own data properties once; a throwing getter becomes INVALID without its message. */
function readFields(value: object, what: string): Map<string, unknown> {
  const fields = new Map<string, unknown>();
  try {
    for (const key of Reflect.ownKeys(value)) {
      if (typeof key !== 'string') throw new Error('symbol key');
      fields.set(key, Reflect.get(value, key));
    }
  } catch {
    throw invalid(`${what} could not be read`);
  }
  return fields;
}

/**
 * Encodes items and checks each against the SDK's item schema.
 * @throws TidemarkError INVALID naming the first bad item.
 */
export function checkItems(items: unknown, path: string, schema: boolean): JsonValue[] {
  if (!Array.isArray(items)) throw new TidemarkError('INVALID', `${path}: must be an array of items`);
  const encoded = encodeValue(items, path) as JsonValue[];
  encoded.forEach((item, i) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      throw new TidemarkError('INVALID', `${path}[${i}]: an item must be an object`);
    }
    if (schema && !protocol.ModelItem.safeParse(decodeValue(item)).success) {
      throw new TidemarkError('INVALID', `${path}[${i}]: not a valid session history item`);
    }
  });
  return encoded;
}

function checkTransaction(value: unknown): CheckedTransaction {
  if (value === null || typeof value !== 'object') throw invalid('transaction must be an object');
  const fields = readFields(value, 'transaction');
  const type = fields.get('type');
  const expect = (names: string[]) => {
    const extra = [...fields.keys()].filter((key) => !names.includes(key));
    if (extra.length > 0 || names.some((name) => !fields.has(name))) {
      throw invalid(`${String(type)} transaction must have exactly the fields ${names.join(', ')}`);
    }
  };
  if (type === 'append_items') {
    expect(['type', 'items']);
    return { type, items: checkItems(fields.get('items'), 'transaction.items', true) };
  }
  if (type === 'replace_suffix') {
    expect(['type', 'expectedSuffix', 'replacement']);
    return {
      type,
      expectedSuffix: checkItems(fields.get('expectedSuffix'), 'transaction.expectedSuffix', true),
      replacement: checkItems(fields.get('replacement'), 'transaction.replacement', true),
    };
  }
  throw invalid('transaction type must be append_items or replace_suffix');
}

/**
 * Checks the arguments of `applyHistoryTransaction`.
 * @throws TidemarkError INVALID naming what was wrong.
 */
export function checkTransactionArgs(args: unknown): CheckedTransactionArgs {
  if (args === null || typeof args !== 'object') throw invalid('arguments must be an object');
  const fields = readFields(args, 'arguments');
  const operationId = fields.get('operationId');
  if (typeof operationId !== 'string' || operationId.trim() === '') {
    throw invalid('operationId must be a non-empty string');
  }
  const transaction = checkTransaction(fields.get('transaction'));
  return { operationId, transaction, digest: digestOf(transaction as unknown as JsonValue) };
}
