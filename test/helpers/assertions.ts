import { expect } from 'chai';
import { FenecError } from '../../shared/errors.js';

/** A tree without its positions, for comparisons that are about shape. */
export function withoutPos<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutPos) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => k !== 'pos')
        .map(([k, v]) => [k, withoutPos(v)]),
    ) as T;
  }
  return value;
}

/** Runs `fn` and returns the FenecError it throws; fails the test when it throws none, or another kind. */
export function refusal(fn: () => unknown): FenecError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(FenecError);
    return err as FenecError;
  }
  return expect.fail('expected a FenecError');
}
