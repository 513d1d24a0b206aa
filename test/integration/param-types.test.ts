/**
 * A parameter of the wrong type is refused naming the type of the field it meets, as the same value
 * written in the statement is: over /query of a real server.
 */
import * as path from 'node:path';
import { expect } from 'chai';
import { query, Sandbox, type ServerProcess } from './processes.js';

const TOKEN = 'param-types-token';

describe('a parameter of the wrong type', function () {
  this.timeout(30_000);
  const sandbox = new Sandbox();
  let server: ServerProcess;

  before(async () => {
    server = await sandbox.startServer(['--file', path.join(sandbox.dir(), 'p.fenec'), '--http-token', TOKEN]);
    const created = await query(server.url, 'create collection docs (year int, score float, tags [int])', [], TOKEN);
    expect(created.status).to.equal(200);
  });
  after(() => sandbox.cleanUp());

  async function refusal(statement: string, params: unknown[]): Promise<{ code: string; message: string }> {
    const reply = await query(server.url, statement, params, TOKEN);
    expect(reply.status, reply.text).to.equal(400);
    return (reply.json as { error: { code: string; message: string } }).error;
  }

  it('names an int field int', async () => {
    const error = await refusal('get docs where year = $1', ['2024']);
    expect(error.code).to.equal('type_mismatch');
    expect(error.message).to.equal('field year takes int; the value given is the text "2024"');
  });

  it('names id int, on either side of the comparison', async () => {
    expect((await refusal('get docs where id = $1', ['7'])).message).to.equal(
      'field id takes int; the value given is the text "7"',
    );
    expect((await refusal('get docs where $1 < id', [true])).message).to.equal(
      'field id takes int; the value given is the bool true',
    );
  });

  it('names the element type of an int list', async () => {
    const error = await refusal('get docs where year in $1', [['2024']]);
    expect(error.message).to.equal('the array after in[0] takes int; the value given is the text "2024"');
  });

  it('still takes any number for an int field, and names a float field float', async () => {
    const reply = await query(server.url, 'get docs where year > $1', [2020.5], TOKEN);
    expect(reply.status, reply.text).to.equal(200);
    expect((await refusal('get docs where score = $1', ['1'])).message).to.equal(
      'field score takes float; the value given is the text "1"',
    );
  });
});
