/**
 * The serving thread's event-loop delay, sampled every millisecond while the process serves HTTP
 * requests and for a second after, and not at all while it is idle.
 *
 * Node's histogram (monitorEventLoopDelay) records the whole time between two ticks of a timer, so
 * its resolution is the error of every figure: at prom-client's default of 10 ms an idle loop read
 * 10–13 ms, and a 20 ms bound could not be checked. A timer every millisecond, though, costs an idle
 * process about 3 % of a core (measured on a 2-core VM: 27–30 ms of CPU a second, against 0.1 with no
 * timer), which every node and router would spend doing nothing. Sampling only around requests keeps
 * the precision where a delay can hold anyone up; a stall of an idle thread is seen only by a request
 * that arrives during it, as that request's latency.
 */
import { subscribe } from 'node:diagnostics_channel';
import { monitorEventLoopDelay, type ELDHistogram } from 'node:perf_hooks';
import { QuietTimer } from '../quiet-timer.js';

/** How often the delay is sampled while requests come, in ms: the error of the figures. */
export const LOOP_DELAY_RESOLUTION_MS = 1;
/** How long after the last request's arrival the sampling goes on. */
export const LOOP_DELAY_KEEP_MS = 1_000;

/** The figures of one window, in seconds; all 0 when nothing was sampled (an idle window). */
export interface LoopDelayFigures {
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly stddev: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
}

const IDLE: LoopDelayFigures = Object.freeze({ min: 0, max: 0, mean: 0, stddev: 0, p50: 0, p90: 0, p99: 0 });

export class LoopDelaySampler {
  readonly #histogram: ELDHistogram = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
  /** Ends the sampling LOOP_DELAY_KEEP_MS after the last request's arrival. */
  readonly #keep = new QuietTimer(LOOP_DELAY_KEEP_MS, () => this.#histogram.disable());

  /** Samples from every HTTP request's arrival in this process (Node's `http.server.request.start` channel) on. */
  constructor() {
    subscribe('http.server.request.start', this.busy);
  }

  /** A request arrived: sample for LOOP_DELAY_KEEP_MS from now. */
  readonly busy = (): void => {
    if (!this.#keep.pending) this.#histogram.enable();
    this.#keep.busy();
  };

  /** The figures since the last read, and a new window. */
  read(): LoopDelayFigures {
    const h = this.#histogram;
    const figures =
      h.count === 0
        ? IDLE
        : {
            min: h.min / 1e9,
            max: h.max / 1e9,
            mean: h.mean / 1e9,
            stddev: h.stddev / 1e9,
            p50: h.percentile(50) / 1e9,
            p90: h.percentile(90) / 1e9,
            p99: h.percentile(99) / 1e9,
          };
    h.reset();
    return figures;
  }
}
