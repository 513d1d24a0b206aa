/**
 * examples/mcp-agent as docs/agents-and-mcp.md runs it — two `node agent.mjs "…"` runs — against a
 * stand-in for the Messages API on 127.0.0.1 (the SDK pointed at it by ANTHROPIC_BASE_URL). The
 * stand-in plays a model's turns from a script: to a user's message it answers with tool calls
 * (tool_use), and to their results (tool_result) with text made from what the results hold. Everything
 * else is real: the Anthropic SDK's tool runner, the official MCP client, `fenec mcp` started by name,
 * and the .fenec file that keeps the memory from one run to the next.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { FENEC, linkBins, runCommand, Sandbox, SYSTEM_PATH, type Finished } from './processes.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const AGENT = path.join(ROOT, 'examples/mcp-agent/agent.mjs');
const API_KEY = 'sk-ant-stand-in';
const TELL = 'I indent with tabs, and the deploy runs on Fridays';
const ASK = 'when does the deploy run?';

type Block = { type: string; [key: string]: unknown };
interface Turn {
  readonly content: Block[];
  readonly stop_reason: 'tool_use' | 'end_turn';
}
type Message = { role: string; content: string | Block[] };
interface MessagesRequest {
  readonly model: string;
  readonly system?: unknown;
  readonly tools: { name: string; input_schema: unknown }[];
  readonly messages: Message[];
  /**
   * A message thread: the server keeps the conversation under the reply's id, and a continuation sends only the new
   * turn.
   */
  readonly thread?: { type: 'create' } | { type: 'continue'; previous_message_id: string };
}

/** What the scripted model does with the user's first message: the tool calls it makes. */
const CALLS: Readonly<Record<string, readonly { name: string; input: Record<string, unknown> }[]>> = {
  [TELL]: [
    { name: 'remember', input: { text: 'the user indents with tabs', tags: ['preferences'] } },
    { name: 'remember', input: { text: 'the deploy runs on Fridays', tags: ['ops'] } },
  ],
  [ASK]: [{ name: 'recall', input: { text: 'when does the deploy run', limit: 5 } }],
};

/** The text a tool_result block carries (a string, or text blocks). */
function resultText(block: Block): string {
  const content = block.content as string | { type: string; text?: string }[];
  return typeof content === 'string' ? content : content.map((part) => part.text ?? '').join('');
}

/**
 * The rows of a read's tool_result: the JSON object in its text (which may come wrapped in lines that
 * mark it as data).
 */
function rowsOf(block: Block): { text: string }[] {
  const text = resultText(block);
  return (JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1)) as { rows: { text: string }[] }).rows;
}

/** The scripted model: tool calls for a new message, then an answer made only of what the results say. */
function modelTurn(messages: readonly Message[]): Turn {
  const first = messages[0]!;
  const asked =
    typeof first.content === 'string' ? first.content : (first.content.find((b) => b.type === 'text')?.text as string);
  const last = messages.at(-1)!;
  const results = typeof last.content === 'string' ? [] : last.content.filter((block) => block.type === 'tool_result');
  if (results.length === 0) {
    const calls = CALLS[asked] ?? [];
    return {
      stop_reason: 'tool_use',
      content: calls.map((call, i) => ({ type: 'tool_use', id: `toolu_${messages.length}_${i}`, ...call })),
    };
  }
  if (results.some((block) => block.is_error === true)) {
    return {
      stop_reason: 'end_turn',
      content: [{ type: 'text', text: `A tool failed: ${results.map(resultText).join(' ')}` }],
    };
  }
  if (asked === TELL)
    return { stop_reason: 'end_turn', content: [{ type: 'text', text: `Noted ${results.length} things.` }] };
  const rows = results.flatMap(rowsOf);
  // As a model does, it answers from the memory recall ranks first.
  const text = rows.length === 0 ? 'I do not know: nothing in my memory matches.' : `From my memory: ${rows[0]!.text}.`;
  return { stop_reason: 'end_turn', content: [{ type: 'text', text }] };
}

interface Taken {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: MessagesRequest;
  /** The whole conversation the turn answered: the thread's, then the request's new messages. */
  readonly messages: Message[];
}

/**
 * The Messages API stand-in: POST /v1/messages, answered by modelTurn, with message threads kept as
 * the API keeps them; every request it took, kept.
 */
async function standIn(): Promise<{ url: string; requests: Taken[]; close(): Promise<void> }> {
  const requests: Taken[] = [];
  const threads = new Map<string, Message[]>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    const fail = (status: number, type: string, message: string): void => {
      res
        .writeHead(status, { 'content-type': 'application/json' })
        .end(JSON.stringify({ type: 'error', error: { type, message } }));
    };
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url!.startsWith('/v1/messages'))
        return fail(404, 'not_found_error', 'no route');
      const body = JSON.parse(Buffer.concat(chunks).toString()) as MessagesRequest;
      const earlier = body.thread?.type === 'continue' ? threads.get(body.thread.previous_message_id) : [];
      if (earlier === undefined) return fail(400, 'invalid_request_error', 'no thread holds previous_message_id');
      const messages = [...earlier, ...body.messages];
      requests.push({ headers: req.headers, body, messages });
      const turn = modelTurn(messages);
      const id = `msg_${requests.length}`;
      if (body.thread !== undefined) threads.set(id, [...messages, { role: 'assistant', content: turn.content }]);
      const message = {
        id,
        type: 'message',
        role: 'assistant',
        model: body.model,
        ...turn,
        stop_sequence: null,
        usage: { input_tokens: 100, output_tokens: 20 },
      };
      res
        .writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${requests.length}` })
        .end(JSON.stringify(message));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe("examples/mcp-agent: Claude with fenecdb's memory, through the Anthropic SDK's tool runner", function () {
  this.timeout(90_000);
  const sandbox = new Sandbox();
  let api: Awaited<ReturnType<typeof standIn>>;
  let bin: string;

  /** `node agent.mjs MESSAGE` in `cwd`, as a user runs it: `fenec` found on the PATH. */
  const agent = (message: string, cwd: string): Promise<Finished> =>
    runCommand(process.execPath, [AGENT, message], {
      env: { PATH: `${bin}:${SYSTEM_PATH}`, HOME: cwd, ANTHROPIC_API_KEY: API_KEY, ANTHROPIC_BASE_URL: api.url },
      cwd,
      timeoutMs: 60_000,
    });

  before(async () => {
    api = await standIn();
    bin = path.join(sandbox.dir(), 'bin');
    const linked = await linkBins({ FENEC_BIN_DIR: bin, HOME: bin });
    expect(linked.code, linked.stderr).to.equal(0);
  });

  after(async () => {
    await api.close();
    await sandbox.cleanUp();
  });

  it('remembers in one run what it was told, and answers the next run from that memory', async () => {
    const dir = sandbox.dir();
    const told = await agent(TELL, dir);
    expect(told.code, told.stderr).to.equal(0);
    expect(told.stdout.trim()).to.equal('Noted 2 things.');

    // The memory is in the file, written through the real fenec mcp.
    const stored = await sandbox.run(FENEC, [
      'query',
      '--file',
      path.join(dir, 'agent.fenec'),
      'get memories select text, tags order id',
    ]);
    expect(stored.code, stored.stderr).to.equal(0);
    expect(JSON.parse(stored.stdout).rows).to.deep.equal([
      { id: 1, text: 'the user indents with tabs', tags: ['preferences'] },
      { id: 2, text: 'the deploy runs on Fridays', tags: ['ops'] },
    ]);

    const before = api.requests.length;
    const asked = await agent(ASK, dir);
    expect(asked.code, asked.stderr).to.equal(0);
    expect(asked.stdout.trim()).to.equal('From my memory: the deploy runs on Fridays.');

    // The second run's answer came from the recall's result, which fenec read from the file.
    const turns = api.requests.slice(before);
    expect(turns).to.have.length(2);
    const results = (turns[1]!.messages.at(-1)!.content as Block[]).filter((block) => block.type === 'tool_result');
    expect(results).to.have.length(1);
    expect(rowsOf(results[0]!)[0]!.text).to.equal('the deploy runs on Fridays');
  });

  it('answers without a memory that nothing matches, in a folder where nothing was told', async () => {
    const asked = await agent(ASK, sandbox.dir());
    expect(asked.code, asked.stderr).to.equal(0);
    expect(asked.stdout.trim()).to.equal('I do not know: nothing in my memory matches.');
  });

  it("sends Claude the tools fenec mcp lists, as the SDK's MCP helpers make them, with the key and the model", () => {
    const first = api.requests[0]!;
    // The SDK sends the key as x-api-key or as a bearer token, by its version.
    expect(first.headers['x-api-key'] ?? first.headers.authorization?.replace(/^Bearer /, '')).to.equal(API_KEY);
    expect(first.body.model).to.equal('claude-sonnet-5-5');
    expect(first.body.tools.map((tool) => tool.name)).to.deep.equal([
      'query',
      'search',
      'schema',
      'remember',
      'recall',
      'forget',
    ]);
    expect(first.body.tools.every((tool) => (tool.input_schema as { type: string }).type === 'object')).to.equal(true);
    expect(first.body.messages).to.deep.equal([{ role: 'user', content: TELL }]);
  });

  it('says how to run it when given no message', async () => {
    const done = await agent('', sandbox.dir());
    expect(done.code).to.equal(2);
    expect(done.stderr).to.include('usage: node agent.mjs');
  });
});
