/**
 * `fenec`'s POST to a server's /query (node/cli/server-client.ts): the answer and its status, and
 * `unavailable` — never a hang — when nothing or no fenecdb server answers; and requests sent in order, each
 * on the one before's `102 Processing` (OrderedRequests, `fenec import`'s batches).
 */
import { expect } from 'chai';
import * as http from 'node:http';
import * as net from 'node:net';
import { OrderedRequests, postQuery, type Outcome } from '../../../node/cli/server-client.js';
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
      const quiet = await refusal(postQuery(silent.url, '{}', undefined, undefined, 200));
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

  /**
   * A server that answers each request `hold` ms after it came, with a 102 first when `interim`, and request number
   * `refused` with a 400 at once; it records when each request came and was answered, and the most it held unanswered.
   */
  async function holding(interim: boolean, hold: number, refused = -1) {
    const events: string[] = [];
    let open = 0;
    let most = 0;
    const { server, url } = await listening(
      http.createServer((request, response) => {
        const parts: Buffer[] = [];
        request.on('data', (part: Buffer) => parts.push(part));
        request.on('end', () => {
          const n = JSON.parse(Buffer.concat(parts).toString()).n as number;
          events.push(`came ${n}`);
          most = Math.max(most, ++open);
          // Request `refused` is refused as a statement is: at once, with no 102 (nothing was committed).
          if (n === refused) {
            events.push(`answered ${n}`);
            open -= 1;
            return void response.writeHead(400, { 'content-type': 'application/json' }).end('{}');
          }
          if (interim && request.headers['fenec-interim'] === 'committed') response.writeProcessing();
          setTimeout(() => {
            events.push(`answered ${n}`);
            open -= 1;
            response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ n }));
          }, hold);
        });
      }),
    );
    /** Sends `count` requests in order (a refusal fails its answer, as `fenec import`'s does): the answers' numbers. */
    const send = async (count: number): Promise<number[]> => {
      const ordered = new OrderedRequests<Outcome>();
      const answers: Promise<Outcome>[] = [];
      for (let n = 0; n < count; n++) {
        const pushed = await ordered.push((committed) =>
          postQuery(url, JSON.stringify({ n }), undefined, committed).then((outcome) =>
            outcome.ok ? outcome : Promise.reject(new Error(`${n} refused`)),
          ),
        );
        if (pushed === undefined) break;
        answers.push(pushed.done);
      }
      const settled = await Promise.allSettled(answers);
      return settled.map((a) => (a.status === 'fulfilled' ? (a.value.body as { n: number }).n : -1));
    };
    return { server, events, send, most: () => most };
  }

  it("sends the next request on the one before's 102, at most two unanswered, and answers each in order", async () => {
    const { server, events, send, most } = await holding(true, 40);
    try {
      expect(await send(5)).to.deep.equal([0, 1, 2, 3, 4]);
      // Each request comes before the one before it is answered, in order.
      expect(events.filter((e) => e.startsWith('came'))).to.deep.equal([
        'came 0',
        'came 1',
        'came 2',
        'came 3',
        'came 4',
      ]);
      expect(events.indexOf('came 1')).to.be.below(events.indexOf('answered 0'));
      expect(events.indexOf('came 2')).to.be.above(events.indexOf('answered 0'));
      expect(most()).to.equal(2);
    } finally {
      server.close();
    }
  });

  it('sends the next request on the answer before when the server sends no 102', async () => {
    const { server, events, send, most } = await holding(false, 10);
    try {
      expect(await send(3)).to.deep.equal([0, 1, 2]);
      expect(events).to.deep.equal(['came 0', 'answered 0', 'came 1', 'answered 1', 'came 2', 'answered 2']);
      expect(most()).to.equal(1);
    } finally {
      server.close();
    }
  });

  it('sends nothing after a request refused', async () => {
    const { server, events, send } = await holding(true, 40, 2);
    try {
      // 2 was sent on 1's 102 and refused: nothing goes after it.
      expect(await send(6)).to.deep.equal([0, 1, -1]);
      expect(events.filter((e) => e.startsWith('came'))).to.deep.equal(['came 0', 'came 1', 'came 2']);
    } finally {
      server.close();
    }
  });
});
