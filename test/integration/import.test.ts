/**
 * `fenec import` against a real server over HTTP (and into a file): NDJSON, a JSON array and stdin,
 * a refused row in the middle named by its line with what was committed, and the wait for the
 * vector index to hold every row, seen through `schema`. Last, the count of a batch committed after the
 * refused one (`committed_after`), against a server of the test's own (below: why).
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { FENEC, query, Sandbox, type Finished, type ServerProcess } from './processes.js';

const TOKEN = 'import-test-token';
const DIMS = 8;
const RUN_MS = 60_000;

function rowOf(i: number): Record<string, unknown> {
  // A fixed pseudo-random vector per row (the classic shader hash): no two rows near each other.
  const v = Array.from({ length: DIMS }, (_, d) => {
    const x = Math.sin(i * 12.9898 + d * 78.233) * 43758.5453;
    return Number((x - Math.floor(x) - 0.5).toFixed(6));
  });
  return { title: `row ${i}`, body: `the words of row ${i}`, year: 2000 + (i % 30), v };
}

const ndjson = (rows: readonly unknown[]): string => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

describe('fenec import', function () {
  this.timeout(180_000);
  const sandbox = new Sandbox();
  let server: ServerProcess;
  let dir: string;
  let n = 0;

  const q = (statement: string, params: unknown[] = []) => query(server.url, statement, params, TOKEN);
  /** A fresh collection for each test. */
  const fresh = async (): Promise<string> => {
    const name = `docs${++n}`;
    expect(
      (
        await q(
          `create collection ${name} (title text required @text, body text @text, year int @sorted, v vector<${DIMS}> @hnsw(cosine))`,
        )
      ).status,
    ).to.equal(200);
    return name;
  };
  const runImport = (args: string[], stdin?: string | Buffer): Promise<Finished> =>
    sandbox.run(
      FENEC,
      ['import', '--url', server.url, ...args],
      { FENEC_TOKEN: TOKEN },
      { timeoutMs: RUN_MS, ...(stdin === undefined ? {} : { stdin }) },
    );
  const summaryOf = (run: Finished): Record<string, number> => {
    expect(run.code, run.stderr).to.equal(0);
    return JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, number>;
  };
  const refusalOf = (run: Finished): { error: { code: string; message: string }; line: number; committed: number } => {
    expect(run.code, run.stdout).to.equal(1);
    return JSON.parse(run.stderr.trim().split('\n').at(-1)!);
  };

  before(async () => {
    dir = sandbox.dir();
    server = await sandbox.startServer(['--file', path.join(dir, 'import.fenec'), '--http-token', TOKEN]);
  });
  after(() => sandbox.cleanUp());

  it('loads 5 000 rows of NDJSON in batches, then waits until the vector index holds them all', async () => {
    const name = await fresh();
    const file = path.join(dir, 'rows.ndjson');
    fs.writeFileSync(file, ndjson(Array.from({ length: 5000 }, (_, i) => rowOf(i))));
    const run = await runImport(['--batch-bytes', '100000', name, file]);
    const summary = summaryOf(run);
    expect(summary).to.include({ rows: 5000 });
    expect(summary.index_seconds).to.be.a('number');
    expect(run.stderr).to.match(/5 000 rows into docs\d+ in/);
    expect(run.stderr).to.match(/the vector indexes hold every row/);
    expect((await q(`get ${name} count`)).json.count).to.equal(5000);
    const field = (await q(`schema ${name}`)).json.collections[0].fields.find((f: { name: string }) => f.name === 'v');
    expect(field.index).to.deep.equal({ rows: 5000, pending: 0, building: false });
    const near = await q(`get ${name} select title near v $1 limit 1`, [rowOf(4321).v]);
    expect(near.json.rows[0].title).to.equal('row 4321');
  });

  it('loads a JSON array, and rows from stdin', async () => {
    const name = await fresh();
    const file = path.join(dir, 'rows.json');
    fs.writeFileSync(
      file,
      JSON.stringify(
        Array.from({ length: 700 }, (_, i) => rowOf(i)),
        null,
        2,
      ),
    );
    expect(summaryOf(await runImport(['--batch-bytes', '20000', name, file]))).to.include({ rows: 700 });
    expect(
      summaryOf(await runImport([name, '-'], ndjson(Array.from({ length: 300 }, (_, i) => rowOf(700 + i))))),
    ).to.include({ rows: 300 });
    const fromArray = `[${Array.from({ length: 50 }, (_, i) => JSON.stringify(rowOf(1000 + i))).join(',\n')}]`;
    expect(summaryOf(await runImport(['--no-wait', name, '-'], fromArray))).to.not.have.property('index_seconds');
    expect((await q(`get ${name} count`)).json.count).to.equal(1050);
  });

  it('sends every byte as the file has it: a byte order mark, CRLF lines, characters of several bytes, rows longer than a read', async () => {
    // "à" is C3 A0 in UTF-8: A0 read alone is latin1's no-break space, which no trim may take.
    const texts = [
      'voilà',
      'naïve café à',
      '🦊 fennec 狐',
      'à'.repeat(40_000),
      `a quote \" and a brace } in text ${'é'.repeat(70_000)}`,
    ];
    const rows = texts.map((title, i) => ({ ...rowOf(i), title }));
    for (const [format, text] of [
      ['ndjson', `\ufeff${rows.map((r) => JSON.stringify(r)).join('\r\n')}\r\n\r\n`],
      ['array', `\ufeff [\r\n${rows.map((r) => JSON.stringify(r)).join(',\r\n')}\r\n]\r\n`],
    ] as const) {
      const name = await fresh();
      const file = path.join(dir, `utf8.${format}`);
      fs.writeFileSync(file, text);
      expect(summaryOf(await runImport(['--no-wait', '--batch-bytes', '150000', name, file]))).to.include({
        rows: texts.length,
      });
      const stored = (await q(`get ${name} select title order id`)).json.rows.map((r: { title: string }) => r.title);
      expect(stored, format).to.deep.equal(texts);
    }
  });

  it('stops at the first refused batch, naming the line, and says what was committed', async () => {
    const name = await fresh();
    const rows: unknown[] = Array.from({ length: 3000 }, (_, i) => rowOf(i));
    rows[2499] = { ...rowOf(2499), year: 'late' };
    const file = path.join(dir, 'bad.ndjson');
    fs.writeFileSync(file, ndjson(rows));
    const refused = refusalOf(await runImport(['--batch-bytes', '30000', name, file]));
    expect(refused.error.code).to.equal('type_mismatch');
    expect(refused.line).to.equal(2500);
    expect(refused.error.message).to.match(/^line 2500: field year takes int/);
    expect(refused.committed).to.be.within(1, 2499);
    // Every batch before the refused one, and nothing from it on.
    expect((await q(`get ${name} count`)).json.count).to.equal(refused.committed);
    expect((await q(`get ${name} where title = $1 count`, [`row ${refused.committed - 1}`])).json.count).to.equal(1);
    expect((await q(`get ${name} where title = $1 count`, [`row ${refused.committed}`])).json.count).to.equal(0);
  });

  it('names the line that is not a JSON object, and a collection that does not exist', async () => {
    const name = await fresh();
    const text = `${ndjson([rowOf(1), rowOf(2)])}{"title": "broken"\n${ndjson([rowOf(3)])}`;
    const refused = refusalOf(await runImport([name, '-'], text));
    expect([refused.error.code, refused.line]).to.deep.equal(['bad_json', 3]);
    expect(refused.committed).to.equal(0);
    // Shaped as one object but not JSON: the loader does not parse rows, the server refuses the batch whole.
    const unquoted = refusalOf(
      await runImport([name, '-'], `${ndjson([rowOf(1), rowOf(2)])}{title: "no quotes"}\n${ndjson([rowOf(3)])}`),
    );
    expect([unquoted.error.code, unquoted.line, unquoted.committed]).to.deep.equal(['bad_json', 3, 0]);
    expect(unquoted.error.message).to.match(/^line 3: not JSON/);
    // Two objects on one line are not one row, nor two.
    const two = refusalOf(await runImport([name, '-'], `${ndjson([rowOf(1)])}{"title": "a"}, {"title": "b"}\n`));
    expect([two.error.code, two.line, two.committed]).to.deep.equal(['bad_json', 2, 0]);
    const array = refusalOf(await runImport([name, '-'], `${ndjson([rowOf(1)])}[{"title": "a"}]\n`));
    expect(array.error.message).to.match(/^line 2: a row is a JSON object/);
    expect((await q(`get ${name} count`)).json.count).to.equal(0);
    // A file saved as Latin-1: its "é" is the byte 0xe9, which decoded as UTF-8 would have been stored as U+FFFD.
    const latin1 = Buffer.concat([
      Buffer.from(`${ndjson([rowOf(1)])}{"title": "caf`),
      Buffer.from([0xe9]),
      Buffer.from(`"}\n${ndjson([rowOf(3)])}`),
    ]);
    const notUtf8 = refusalOf(await runImport([name, '-'], latin1));
    expect([notUtf8.error.code, notUtf8.line, notUtf8.committed]).to.deep.equal(['bad_json', 2, 0]);
    expect(notUtf8.error.message).to.equal('line 2: not UTF-8 (byte 14 (0xe9) of the line begins no character)');
    expect((await q(`get ${name} count`)).json.count).to.equal(0);
    const unknown = refusalOf(await runImport(['nothere', '-'], ndjson([rowOf(1)])));
    expect([unknown.error.code, unknown.committed]).to.deep.equal(['unknown_collection', 0]);
  });

  it("loads into a file, and the file's index is stored for the next open", async () => {
    const file = path.join(dir, 'direct.fenec');
    const create = await sandbox.run(FENEC, [
      'query',
      '--file',
      file,
      `create collection docs (title text required, body text, year int, v vector<${DIMS}> @hnsw(cosine))`,
    ]);
    expect(create.code, create.stderr).to.equal(0);
    const run = await sandbox.run(
      FENEC,
      ['import', '--file', file, 'docs', '-'],
      {},
      { timeoutMs: RUN_MS, stdin: ndjson(Array.from({ length: 2000 }, (_, i) => rowOf(i))) },
    );
    expect(summaryOf(run)).to.include({ rows: 2000 });
    const schema = await sandbox.run(FENEC, ['query', '--file', file, 'schema docs']);
    expect(JSON.parse(schema.stdout).collections[0].fields.at(-1).index).to.deep.equal({
      rows: 2000,
      pending: 0,
      building: false,
    });
  });
});

/**
 * A batch sent on a replicated write's 102 and committed after the batch before it was refused: that happens only
 * when the tenant moved to another node in the moment between the first batch's commit and the second's arrival,
 * a window no run of real nodes can be made to hit. So the other side here is a server of the test's own, speaking
 * a replicated node's answers as they come over HTTP: `schema`, a batch committed (102, then 200), one whose log
 * did not ack (102, then 503 `log_unavailable`), and one committed on the new owner (102, then 200).
 */
describe('fenec import, a batch committed after the refused one', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  it('counts it apart as committed_after, and sends nothing after it', async () => {
    const batches: number[] = [];
    const server = http.createServer((request, response) => {
      const parts: Buffer[] = [];
      request.on('data', (part: Buffer) => parts.push(part));
      request.on('end', () => {
        const { statement, params } = JSON.parse(Buffer.concat(parts).toString()) as {
          statement: string;
          params?: unknown[][];
        };
        const answer = (status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}) =>
          response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
        if (statement.startsWith('schema')) return answer(200, { collections: [{ name: 'docs', fields: [] }] });
        const batch = batches.push(params![0]!.length);
        expect(request.headers['fenec-interim']).to.equal('committed');
        response.writeProcessing();
        // The second batch's ack is slow and then lost; the third, sent on its 102, is committed meanwhile.
        if (batch === 2)
          return setTimeout(
            () =>
              answer(
                503,
                {
                  error: {
                    code: 'log_unavailable',
                    message: 'the replicated log did not answer in time: TimeoutError',
                    hint: 'the outcome is unknown: read the write back before making it again',
                  },
                },
                { 'retry-after': '1' },
              ),
            300,
          );
        answer(200, { inserted: params![0]!.length });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const rows = Array.from({ length: 40 }, (_, i) => JSON.stringify({ title: `row ${i}`, pad: 'x'.repeat(80) }));
      const run = await sandbox.run(
        FENEC,
        ['import', '--url', url, '--batch-bytes', '1024', 'docs', '-'],
        {},
        {
          timeoutMs: 30_000,
          stdin: `${rows.join('\n')}\n`,
        },
      );
      expect(run.code, run.stdout).to.equal(1);
      const [first, second, third] = batches;
      // Nothing after the third: it was sent before the second's refusal came, the fourth would have been after.
      expect(batches).to.have.length(3);
      expect(first! + second! + third!).to.be.below(40);
      expect(JSON.parse(run.stderr.trim().split('\n').at(-1)!)).to.deep.equal({
        error: {
          code: 'log_unavailable',
          message: `the batch of lines ${first! + 1}–${first! + second!}: the replicated log did not answer in time: TimeoutError`,
          hint: 'the outcome is unknown: read the write back before making it again',
        },
        line: first! + 1,
        committed: first,
        committed_after: third,
      });
    } finally {
      server.close();
    }
  });
});
