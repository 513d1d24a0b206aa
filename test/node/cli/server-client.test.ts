/**
 * `fenec`'s POST to a server's /query (node/cli/server-client.ts): the answer and its status, and
 * `unavailable` — never a hang — when nothing or no fenecdb server answers.
 */
import { expect } from 'chai';
import * as http from 'node:http';
import * as net from 'node:net';
import { postQuery } from '../../../node/cli/server-client.js';
import { FenecError } from '../../../shared/errors.js';

async function listening<S extends net.Server>(server: S): Promise<{ server: S; url: URL }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: new URL(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}/query`) };
}

async function refusal(promise: Promise<unknown>): Promise<FenecError> {
  try {
    await promise;
  } catch (err) {
    return err as FenecError;
  }
  return expect.fail('the request was answered');
}

describe("fenec's POST to /query", () => {
  it('sends the body and token, and answers the status and JSON, a refusal too', async () => {
    const { server, url } = await listening(
      http.createServer((request, response) => {
        const parts: Buffer[] = [];
        request.on('data', (part: Buffer) => parts.push(part));
        request.on('end', () => {
          const echoed = {
            body: Buffer.concat(parts).toString(),
            authorization: request.headers.authorization ?? null,
          };
          response
            .writeHead(request.headers.authorization === undefined ? 401 : 200, { 'content-type': 'application/json' })
            .end(JSON.stringify(echoed));
        });
      }),
    );
    try {
      expect(await postQuery(url, Buffer.from('{"statement":"get x"}'), 'tok')).to.deep.equal({
        ok: true,
        status: 200,
        body: { body: '{"statement":"get x"}', authorization: 'Bearer tok' },
      });
      expect(await postQuery(url, '{}', undefined)).to.deep.include({ ok: false, status: 401 });
    } finally {
      server.close();
    }
  });

  it('is unavailable when the server takes the request and never answers, or answers no JSON, or is not there', async () => {
    const held: net.Socket[] = [];
    const silent = await listening(net.createServer((socket) => void held.push(socket)));
    const other = await listening(http.createServer((_request, response) => response.end('<html>')));
    try {
      const quiet = await refusal(postQuery(silent.url, '{}', undefined, 200));
      expect([quiet.code, quiet.message]).to.deep.equal([
        'unavailable',
        `cannot reach ${silent.url.href}: no answer in 0.2 s`,
      ]);
      const html = await refusal(postQuery(other.url, '{}', undefined));
      expect([html.code, html.message]).to.deep.equal([
        'unavailable',
        `${other.url.href} answered 200 with no JSON; is it a fenecdb server?`,
      ]);
    } finally {
      for (const socket of held) socket.destroy();
      silent.server.close();
      other.server.close();
    }
    const gone = await refusal(postQuery(silent.url, '{}', undefined));
    expect(gone.code).to.equal('unavailable');
    expect(gone.message).to.match(/ECONNREFUSED$/);
  });
});
