import * as fs from 'node:fs';
import { expect } from 'chai';
import { Audit, subjectOf } from '../../shared/audit.js';
import { tempDir } from '../helpers/temp.js';

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('Audit', () => {
  const temp = tempDir();
  after(() => temp.remove());

  it('appends one JSON line per event to its file, created with mode 0600', () => {
    const file = temp.file('audit.log');
    fs.writeFileSync(file, '{"kept":true}\n', { mode: 0o600 });
    const audit = Audit.open({ kind: 'file', path: file }, (err) => {
      throw err;
    });
    audit.auth('expired', '127.0.0.1', '/query');
    audit.schema('create', 'memories', { kind: 'server' });
    audit.schema('drop', 'memories', { kind: 'jwt', sub: 'ada' });
    audit.mcp('remember', null, 'ada', false, 'forbidden');
    audit.close();
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    expect(lines.at(-1)).to.equal('');
    const entries = lines.slice(0, -1).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(entries[0]).to.deep.equal({ kept: true });
    for (const entry of entries.slice(1)) expect(entry.time).to.match(ISO_TIME);
    const withoutTime = entries.slice(1).map(({ time, ...rest }) => rest);
    expect(withoutTime).to.deep.equal([
      { event: 'auth', why: 'expired', ip: '127.0.0.1', route: '/query' },
      { event: 'schema', statement: 'create', collection: 'memories', who: 'server', sub: null },
      { event: 'schema', statement: 'drop', collection: 'memories', who: 'jwt', sub: 'ada' },
      { event: 'mcp', tool: 'remember', tenant: null, sub: 'ada', ok: false, error: 'forbidden' },
    ]);
    expect(fs.statSync(temp.file('audit.log')).mode & 0o777).to.equal(0o600);
    const fresh = temp.file('fresh.log');
    Audit.open({ kind: 'file', path: fresh }, () => undefined).close();
    expect(fs.statSync(fresh).mode & 0o777).to.equal(0o600);
  });

  it('writes nothing when off', () => {
    expect(Audit.off.enabled).to.equal(false);
    Audit.off.auth('missing', undefined, '/query');
    Audit.off.schema('compact', null, { kind: 'server' });
  });

  it('hands lines to a sink, one string with its newline each', () => {
    const lines: string[] = [];
    const audit = Audit.toSink((line) => lines.push(line));
    expect(audit.enabled).to.equal(true);
    audit.auth('missing', undefined, '/_metrics');
    expect(lines).to.have.length(1);
    expect(lines[0]!.endsWith('\n')).to.equal(true);
    expect(JSON.parse(lines[0]!)).to.include({ event: 'auth', why: 'missing', ip: null, route: '/_metrics' });
  });

  it('tells onError of a line it could not write, and goes on', () => {
    const file = temp.file('closed.log');
    const errors: unknown[] = [];
    const audit = Audit.open({ kind: 'file', path: file }, (err) => errors.push(err));
    audit.close();
    audit.auth('expired', '127.0.0.1', '/query');
    expect(errors).to.have.length(1);
    expect((errors[0] as NodeJS.ErrnoException).code).to.equal('EBADF');
  });

  it('cuts a long subject, and names none when the claim is not a string', () => {
    expect(subjectOf({ sub: 'ada' })).to.equal('ada');
    expect(subjectOf({ sub: 42 })).to.equal(null);
    expect(subjectOf({})).to.equal(null);
    expect(subjectOf({ sub: 'x'.repeat(500) })!.length).to.equal(201);
  });
});
