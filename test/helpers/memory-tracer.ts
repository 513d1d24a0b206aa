/**
 * A tracer that keeps its finished spans in memory, and a W3C `traceparent` propagator, registered
 * through @opentelemetry/api's globals as an operator's SDK would be: enough to see which span a
 * request's `traceparent` names as its parent.
 */
import { randomBytes } from 'node:crypto';
import {
  propagation,
  trace,
  TraceFlags,
  type Context,
  type Span,
  type SpanContext,
  type SpanOptions,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

export interface FinishedSpan {
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly attributes: Readonly<Record<string, unknown>>;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

class W3cPropagator implements TextMapPropagator {
  inject(context: Context, carrier: unknown, setter: TextMapSetter): void {
    const span = trace.getSpanContext(context);
    if (span === undefined) return;
    setter.set(carrier, 'traceparent', `00-${span.traceId}-${span.spanId}-0${span.traceFlags & 1}`);
  }

  extract(context: Context, carrier: unknown, getter: TextMapGetter): Context {
    const raw = getter.get(carrier, 'traceparent');
    const match = TRACEPARENT.exec(Array.isArray(raw) ? (raw[0] ?? '') : (raw ?? ''));
    if (match === null) return context;
    return trace.setSpanContext(context, {
      traceId: match[1]!,
      spanId: match[2]!,
      traceFlags: parseInt(match[3]!, 16),
      isRemote: true,
    });
  }

  fields(): string[] {
    return ['traceparent'];
  }
}

class MemorySpan implements Span {
  readonly #context: SpanContext;
  readonly #parent: string | undefined;
  readonly #attributes: Record<string, unknown>;
  #name: string;
  readonly #finished: FinishedSpan[];

  constructor(
    name: string,
    context: SpanContext,
    parent: string | undefined,
    attributes: Record<string, unknown>,
    finished: FinishedSpan[],
  ) {
    this.#name = name;
    this.#context = context;
    this.#parent = parent;
    this.#attributes = attributes;
    this.#finished = finished;
  }

  spanContext(): SpanContext {
    return this.#context;
  }
  setAttribute(key: string, value: unknown): this {
    this.#attributes[key] = value;
    return this;
  }
  setAttributes(attributes: Record<string, unknown>): this {
    Object.assign(this.#attributes, attributes);
    return this;
  }
  addEvent(): this {
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(): this {
    return this;
  }
  updateName(name: string): this {
    this.#name = name;
    return this;
  }
  isRecording(): boolean {
    return true;
  }
  recordException(): void {}
  end(): void {
    this.#finished.push({
      name: this.#name,
      traceId: this.#context.traceId,
      spanId: this.#context.spanId,
      parentSpanId: this.#parent,
      attributes: { ...this.#attributes },
    });
  }
}

class MemoryTracer implements Tracer {
  constructor(readonly finished: FinishedSpan[]) {}

  startSpan(name: string, options: SpanOptions = {}, context?: Context): Span {
    const parent = context === undefined ? undefined : trace.getSpanContext(context);
    const spanContext: SpanContext = {
      traceId: parent?.traceId ?? randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      traceFlags: TraceFlags.SAMPLED,
    };
    return new MemorySpan(name, spanContext, parent?.spanId, { ...options.attributes }, this.finished);
  }

  startActiveSpan(name: string, ...args: unknown[]): any {
    const fn = args[args.length - 1] as (span: Span) => unknown;
    return fn(this.startSpan(name));
  }
}

/** The spans of the tracer registered in this process, once one is: the API takes one registration a process. */
let registered: FinishedSpan[] | undefined;

/**
 * Registers the tracer and propagator globally (once a process) and gives the list of finished spans;
 * a later call, from another suite of the same run, gives the same list.
 */
export function registerMemoryTracer(): FinishedSpan[] {
  if (registered !== undefined) return registered;
  const finished: FinishedSpan[] = [];
  registered = finished;
  const tracer = new MemoryTracer(finished);
  const provider: TracerProvider = { getTracer: () => tracer };
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3cPropagator());
  return finished;
}
