/**
 * The benches' statistics, one definition each, so that a p50 or a ratio means the same thing in every
 * bench's figures: percentiles of samples, summaries, sums, and the ratios of paired runs with their
 * spread (on two cores one run alone moves with whatever else the machine does; runs taken side by side
 * and compared round by round move much less).
 */

/**
 * The sample at quantile `p` (0 … 1) of `values`, by nearest rank rounding down: the p50 of four samples
 * is the third smallest, the p99 of 300 the 298th. NaN when there are none.
 */
export function percentile(values: ArrayLike<number>, p: number): number {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

export function median(values: ArrayLike<number>): number {
  return percentile(values, 0.5);
}

export interface Summary {
  readonly p50: number;
  readonly p99: number;
}

/** The p50 and p99 of `values`. */
export function summary(values: ArrayLike<number>): Summary {
  return { p50: percentile(values, 0.5), p99: percentile(values, 0.99) };
}

export function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

/** The lowest and the highest of `values`. */
export function spread(values: readonly number[]): [number, number] {
  return [Math.min(...values), Math.max(...values)];
}

/** ours[i] / baseline[i] for each i: the ratio of each pair of runs taken side by side. */
export function ratios(ours: readonly number[], baseline: readonly number[]): number[] {
  if (ours.length !== baseline.length) throw new Error(`ratios of ${ours.length} runs against ${baseline.length}`);
  return ours.map((value, i) => value / baseline[i]!);
}

export interface PairedRatio {
  /** The median of the per-pair ratios. */
  readonly ratio: number;
  /** Their lowest and highest. */
  readonly spread: [number, number];
}

/** The median of the per-pair ratios of `ours` to `baseline`, and their spread. */
export function pairedRatio(ours: readonly number[], baseline: readonly number[]): PairedRatio {
  const each = ratios(ours, baseline);
  return { ratio: median(each), spread: spread(each) };
}

/** Two decimals, for figures written to JSON. */
export function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
