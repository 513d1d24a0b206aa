import { expect } from 'chai';
import { FENEC, Sandbox, type ServerProcess } from './processes.js';

const TOKEN = 'tenant-cli-test-token';

describe('fenec tenant', () => {
  const sandbox = new Sandbox();
  let node: ServerProcess;
  const fenec = (args: string[], env: NodeJS.ProcessEnv = { FENEC_TOKEN: TOKEN }) =>
    sandbox.run(FENEC, ['tenant', ...args], env);

  before(async () => {
    node = await sandbox.startServer(['--data-dir', sandbox.dir()], { FENEC_TOKEN: TOKEN });
  });
  after(() => sandbox.cleanUp());

  it('creates a tenant with its quotas, lists it, and deletes it', async () => {
    const created = await fenec(['create', 'acme', '--url', node.url, '--quotas', '{"rate": 7}']);
    expect(created.code, created.stderr).to.equal(0);
    expect(JSON.parse(created.stdout)).to.include({ name: 'acme', created: true });
    const listed = await fenec(['list', '--url', node.url]);
    expect(JSON.parse(listed.stdout).tenants).to.deep.include.members([
      {
        name: 'acme',
        quotas: {
          rate: 7,
          burst: 200,
          maxBytes: 1024 ** 3,
          maxCollections: 100,
          maxRows: 1_000_000,
          costMs: 500,
          embedRate: 200,
          statementTimeoutMs: 5_000,
          maxAnswerBytes: 32 * 1024 ** 2,
        },
      },
    ]);
    expect((await fenec(['delete', 'acme', '--url', node.url])).code).to.equal(0);
    const again = await fenec(['delete', 'acme', '--url', node.url]);
    expect(again.code).to.equal(1);
    expect(JSON.parse(again.stderr).error.code).to.equal('unknown_tenant');
  });

  it("refuses a bad name or missing token as usage errors (2), and a wrong token with the server's 401 (1)", async () => {
    expect((await fenec(['create', '../x', '--url', node.url])).code).to.equal(2);
    expect((await fenec(['list', '--url', node.url], {})).code).to.equal(2);
    const wrong = await fenec(['list', '--url', node.url], { FENEC_TOKEN: 'nope' });
    expect(wrong.code).to.equal(1);
    expect(JSON.parse(wrong.stderr).error.code).to.equal('invalid_token');
  });
});
