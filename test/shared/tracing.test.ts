import { expect } from 'chai';
import { otelSampleRatio, otelTracesUrl, tracingConfig } from '../../shared/cli/command-line.js';
import { FenecError } from '../../shared/errors.js';
import { spanRouteOf } from '../../shared/tracing.js';

describe('tracing: the traces URL and the span routes', () => {
  describe('otelTracesUrl', () => {
    it('is none without the flag or the variables (an empty variable is unset)', () => {
      expect(otelTracesUrl(undefined, {})).to.equal(undefined);
      expect(
        otelTracesUrl(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' }),
      ).to.equal(undefined);
    });

    it('appends /v1/traces to a base endpoint, flag or OTEL_EXPORTER_OTLP_ENDPOINT, unless it is there', () => {
      expect(otelTracesUrl('http://127.0.0.1:4318', {})).to.equal('http://127.0.0.1:4318/v1/traces');
      expect(otelTracesUrl('http://collector:4318/', {})).to.equal('http://collector:4318/v1/traces');
      expect(otelTracesUrl('https://otel.example.com/prefix', {})).to.equal(
        'https://otel.example.com/prefix/v1/traces',
      );
      expect(otelTracesUrl('http://collector:4318/v1/traces', {})).to.equal('http://collector:4318/v1/traces');
      expect(otelTracesUrl(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' })).to.equal(
        'http://jaeger:4318/v1/traces',
      );
    });

    it('takes OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, before the base variable; the flag before both', () => {
      const env = {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://base:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/custom',
      };
      expect(otelTracesUrl(undefined, env)).to.equal('http://traces:4318/custom');
      expect(otelTracesUrl('http://flag:4318', env)).to.equal('http://flag:4318/v1/traces');
    });

    it('refuses what is not an http(s) URL, or carries credentials, naming where it came from', () => {
      const refusal = (flag: string | undefined, env: NodeJS.ProcessEnv): FenecError => {
        try {
          otelTracesUrl(flag, env);
        } catch (err) {
          return err as FenecError;
        }
        throw new Error('not refused');
      };
      expect(refusal('collector:4318', {}).message).to.match(
        /^--otel-endpoint takes a collector's http:\/\/ or https:\/\/ URL/,
      );
      expect(refusal('grpc://collector:4317', {}).code).to.equal('invalid_option');
      expect(refusal('http://user:pw@collector:4318', {}).message).to.include('without credentials');
      expect(refusal(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }).message).to.match(
        /^OTEL_EXPORTER_OTLP_ENDPOINT takes/,
      );
    });
  });

  describe('otelSampleRatio and tracingConfig', () => {
    it('keeps every new trace by default, and takes the standard sampler names', () => {
      expect(otelSampleRatio({})).to.equal(1);
      expect(otelSampleRatio({ OTEL_TRACES_SAMPLER: '' })).to.equal(1);
      expect(otelSampleRatio({ OTEL_TRACES_SAMPLER: 'always_off' })).to.equal(0);
      expect(otelSampleRatio({ OTEL_TRACES_SAMPLER: 'parentbased_always_on' })).to.equal(1);
      expect(
        otelSampleRatio({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }),
      ).to.equal(0.25);
      expect(otelSampleRatio({ OTEL_TRACES_SAMPLER: 'traceidratio' })).to.equal(1);
    });

    it('refuses a sampler it does not know and a ratio outside 0…1, naming the variable', () => {
      expect(() => otelSampleRatio({ OTEL_TRACES_SAMPLER: 'jaeger_remote' })).to.throw(
        FenecError,
        /^OTEL_TRACES_SAMPLER takes always_on, /,
      );
      for (const arg of ['1.5', '-0.1', 'half', '0x1']) {
        expect(
          () => otelSampleRatio({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: arg }),
          arg,
        ).to.throw(FenecError, /^OTEL_TRACES_SAMPLER_ARG takes the share of traces kept/);
      }
    });

    it('is no tracing without an endpoint, whatever the sampler; else the endpoint and the ratio', () => {
      expect(tracingConfig(undefined, { OTEL_TRACES_SAMPLER: 'always_on' })).to.equal(undefined);
      expect(
        tracingConfig('http://c:4318', { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }),
      ).to.deep.equal({
        endpoint: 'http://c:4318/v1/traces',
        sampleRatio: 0.1,
        batchDelayMs: 5_000,
        exportTimeoutMs: 5_000,
      });
    });

    it('takes the batch delay and the export timeout from the standard variables, in whole milliseconds', () => {
      expect(
        tracingConfig('http://c:4318', { OTEL_BSP_SCHEDULE_DELAY: '200', OTEL_BSP_EXPORT_TIMEOUT: ' 1000 ' }),
      ).to.include({ batchDelayMs: 200, exportTimeoutMs: 1_000 });
      expect(tracingConfig('http://c:4318', { OTEL_BSP_SCHEDULE_DELAY: '' })).to.include({ batchDelayMs: 5_000 });
      for (const value of ['0', '1.5', '-1', '5s', '60001']) {
        expect(() => tracingConfig('http://c:4318', { OTEL_BSP_SCHEDULE_DELAY: value }), value)
          .to.throw(FenecError, /^OTEL_BSP_SCHEDULE_DELAY takes whole milliseconds from 1 to 60000 \(default 5000\)/)
          .with.property('code', 'invalid_option');
        expect(() => tracingConfig('http://c:4318', { OTEL_BSP_EXPORT_TIMEOUT: value }), value).to.throw(
          FenecError,
          /^OTEL_BSP_EXPORT_TIMEOUT takes whole milliseconds/,
        );
      }
    });
  });

  describe('spanRouteOf', () => {
    it("names a tenant's route as a pattern, the tenant apart", () => {
      expect(spanRouteOf('/t/acme/query')).to.deep.equal({ route: '/t/{tenant}/query', tenant: 'acme' });
      expect(spanRouteOf('/t/acme/_mcp?x=1')).to.deep.equal({ route: '/t/{tenant}/_mcp', tenant: 'acme' });
      expect(spanRouteOf('/t/acme')).to.deep.equal({ route: '/t/{tenant}', tenant: 'acme' });
      expect(spanRouteOf('/query')).to.deep.equal({ route: '/query', tenant: undefined });
    });

    it("never makes a caller's text a route: an unknown route or path is other", () => {
      expect(spanRouteOf('/t/acme/anything-a-caller-sends')).to.deep.equal({
        route: '/t/{tenant}/other',
        tenant: 'acme',
      });
      expect(spanRouteOf('/t/acme/query/more')).to.deep.equal({ route: 'other', tenant: undefined });
      expect(spanRouteOf('/t/NOT_A_TENANT/query')).to.deep.equal({ route: 'other', tenant: undefined });
      expect(spanRouteOf('/wp-admin')).to.deep.equal({ route: 'other', tenant: undefined });
    });

    it("leaves probes, scrapes, the console and the routers' poll untraced", () => {
      for (const path of ['/_health', '/_metrics', '/_console', '/_console/app.js', '/_moved'])
        expect(spanRouteOf(path), path).to.equal(undefined);
    });
  });
});
