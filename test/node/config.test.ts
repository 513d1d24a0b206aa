import { expect } from 'chai';
import * as os from 'node:os';
import { serverConfig } from '../../node/config.js';
import { parseByteSize, parsePort } from '../../shared/cli/options.js';
import { FenecError } from '../../shared/errors.js';

describe('serverConfig', () => {
  it('applies the documented defaults and freezes the result', () => {
    const { cursorSecret, ...config } = serverConfig({ file: 'notes.fenec' });
    // The key cursors are signed with: 32 random bytes of each config's own.
    expect(cursorSecret).to.have.length(32);
    expect(Buffer.from(cursorSecret).equals(Buffer.from(serverConfig({ file: 'notes.fenec' }).cursorSecret))).to.equal(
      false,
    );
    expect(config).to.deep.equal({
      where: { kind: 'file', file: 'notes.fenec' },
      host: '127.0.0.1',
      port: 8080,
      httpToken: undefined,
      httpReadOnly: false,
      readOnly: false,
      maxBodyBytes: 1024 * 1024,
      httpCors: undefined,
      sweepIntervalMs: 10_000,
      jwt: undefined,
      oauth: undefined,
      nats: undefined,
      policy: undefined,
      audit: undefined,
      mcp: undefined,
      otel: undefined,
      // A one-file server runs its statements on its serving thread; a tenant node in one worker a core.
      workers: 0,
      statementTimeoutMs: 5_000,
      busyTimeoutMs: 5_000,
      maxAnswerBytes: 32 * 1024 * 1024,
    });
    expect(Object.isFrozen(serverConfig({ file: 'notes.fenec' }))).to.equal(true);
    expect(serverConfig({ dataDir: 'tenants' }).workers).to.equal(os.availableParallelism());
  });

  it('keeps what the caller gives', () => {
    const config = serverConfig({
      file: 'f',
      host: '0.0.0.0',
      port: 0,
      httpToken: 't',
      httpCors: 'https://app.example.com:8443',
    });
    expect(config).to.include({ host: '0.0.0.0', port: 0, httpToken: 't', httpCors: 'https://app.example.com:8443' });
  });

  for (const [what, input, says] of [
    ['an empty file name', { file: '' }, '--file'],
    ['a port out of range', { file: 'f', port: 70000 }, '--port'],
    ['an empty token', { file: 'f', httpToken: '' }, '--http-token'],
    ['a body limit of 0', { file: 'f', maxBodyBytes: 0 }, '--max-body'],
    [
      'a CORS origin with a path',
      { file: 'f', httpCors: 'https://app.example.com/' },
      'did you mean https://app.example.com?',
    ],
    ['a CORS value that is no URL', { file: 'f', httpCors: '*' }, '--http-cors'],
    ['no worker on a tenant node', { dataDir: 'd', workers: 0 }, '--workers'],
    ['two workers for one file', { file: 'f', workers: 2 }, 'one file is one tenant'],
    ['a time limit of 0', { file: 'f', statementTimeoutMs: 0 }, '--statement-timeout'],
    ['an answer cap of 0', { file: 'f', maxAnswerBytes: 0 }, '--max-answer'],
    ['a negative busy timeout', { file: 'f', busyTimeoutMs: -1 }, '--busy-timeout'],
  ] as const) {
    it(`refuses ${what} with invalid_option naming the flag`, () => {
      expect(() => serverConfig(input))
        .to.throw(FenecError, says)
        .with.property('code', 'invalid_option');
    });
  }
});

describe('parseByteSize', () => {
  it('reads bytes, kb and mb (binary), in any case', () => {
    expect(parseByteSize('65536')).to.equal(65536);
    expect(parseByteSize('512kb')).to.equal(512 * 1024);
    expect(parseByteSize('1MB')).to.equal(1024 * 1024);
    expect(parseByteSize('1.5m')).to.equal(1.5 * 1024 * 1024);
    expect(parseByteSize('100b')).to.equal(100);
  });

  it('refuses anything else, naming --max-body', () => {
    for (const text of ['', 'mb', '1gb', '-1', '0', '12 parsecs']) {
      expect(() => parseByteSize(text), text)
        .to.throw(FenecError, '--max-body')
        .with.property('code', 'invalid_option');
    }
  });
});

describe('parsePort', () => {
  it('reads 0…65535 and refuses the rest', () => {
    expect(parsePort('0')).to.equal(0);
    expect(parsePort('8080')).to.equal(8080);
    for (const text of ['65536', '-1', '80.5', 'http', '']) {
      expect(() => parsePort(text), text).to.throw(FenecError, '--port');
    }
  });
});

describe('--mcp-memory-merge', () => {
  it('takes a cosine above 0 and at most 1, with --mcp-memory', () => {
    const config = serverConfig({ file: 'm.fenec', mcp: { write: false, memory: 'memories', memoryMerge: 0.92 } });
    expect(config.mcp?.memoryMerge).to.equal(0.92);
    for (const memoryMerge of [0, -0.5, 1.5, Number.NaN])
      expect(
        () => serverConfig({ file: 'm.fenec', mcp: { write: false, memory: 'memories', memoryMerge } }),
        String(memoryMerge),
      )
        .to.throw(FenecError, '--mcp-memory-merge')
        .with.property('code', 'invalid_option');
    expect(() =>
      serverConfig({ file: 'm.fenec', mcp: { write: false, memory: undefined, memoryMerge: 0.9 } }),
    ).to.throw(FenecError, 'give --mcp-memory too');
  });
});
