import { expect } from 'chai';
import { parseDurationOption } from '../../shared/cli/options.js';
import { DURATION_PATTERN, parseDuration } from '../../shared/duration.js';
import { FenecError } from '../../shared/errors.js';

describe("durations: one parser for FenecQL's units, the MCP memory and the command lines", () => {
  it('reads a whole number and a unit, in milliseconds', () => {
    expect([
      parseDuration('500ms'),
      parseDuration('10s'),
      parseDuration('30m'),
      parseDuration('12h'),
      parseDuration('7d'),
      parseDuration('2w'),
    ]).to.deep.equal([500, 10_000, 1_800_000, 43_200_000, 604_800_000, 1_209_600_000]);
  });

  it('gives undefined for what is not a duration, or past 2^53 ms', () => {
    for (const text of ['', '10', '1.5s', '-1s', '10 s', '10S', '10y', 's', '99999999999999999w'])
      expect(parseDuration(text), text).to.equal(undefined);
  });

  it("has the MCP schema's pattern take exactly what it reads", () => {
    const pattern = new RegExp(DURATION_PATTERN);
    for (const text of ['500ms', '30m', '7d', '2w']) expect(pattern.test(text), text).to.equal(true);
    for (const text of ['10', '1.5s', '10y', '10 s']) expect(pattern.test(text), text).to.equal(false);
  });

  it('takes 0 on a command line (never), and refuses anything else that is no duration naming the flag', () => {
    expect(parseDurationOption('--sweep-interval', '0')).to.equal(0);
    expect(parseDurationOption('--sweep-interval', ' 10s ')).to.equal(10_000);
    for (const text of ['10', 'soon', '1.5s']) {
      expect(() => parseDurationOption('--node-timeout', text), text)
        .to.throw(FenecError, '--node-timeout')
        .with.property('code', 'invalid_option');
    }
  });
});
