import { expect } from 'chai';
import { CATALOGUE, FenecError } from '../../shared/errors.js';
import { RouteTable, type Miss, type Route } from '../../shared/http/route-table.js';

const route = (methods: string[], path: string, handler: string): Route<string> => ({
  methods,
  path,
  access: 'any',
  body: 'none',
  handler,
});

const ROUTES = [
  route(['POST'], '/t/<tenant>/query', 'query'),
  route(['GET', 'POST'], '/t/<tenant>/_revocations', 'revocations'),
  route(['PUT', 'DELETE'], '/t/<tenant>', 'admin'),
  route(['GET'], '/_tenants', 'tenants'),
  route(['GET', 'HEAD'], '/_console/*', 'console'),
  route(['*'], '/t/<tenant>/_mcp', 'mcp'),
];

describe('the route table', () => {
  const table = new RouteTable('this test', ROUTES);
  const missOf = (method: string, path: string): Miss<string> => {
    const found = table.find(method, path);
    expect(found, `${method} ${path}`).to.have.property('error');
    return found as Miss<string>;
  };

  it('finds a route by method and path, with the tenant its path names', () => {
    expect(table.find('POST', '/t/acme/query')).to.deep.include({ tenant: 'acme' });
    expect((table.find('POST', '/t/acme/query') as { route: Route<string> }).route.handler).to.equal('query');
    expect((table.find('DELETE', '/t/acme') as { route: Route<string> }).route.handler).to.equal('admin');
    expect((table.find('PATCH', '/t/acme/_mcp') as { route: Route<string> }).route.handler).to.equal('mcp');
    expect((table.find('GET', '/_tenants') as { route: Route<string> }).route.handler).to.equal('tenants');
    for (const path of ['/_console', '/_console/', '/_console/app.js', '/_console/a/b']) {
      expect((table.find('GET', path) as { route: Route<string> }).route.handler, path).to.equal('console');
    }
  });

  it('answers a path it does not serve with not_found listing every route, each with its methods', () => {
    const miss = missOf('GET', '/nothing');
    expect(miss.error.code).to.equal('not_found');
    expect(miss.error.message).to.equal(
      'no route GET "/nothing"; this test answers POST /t/<tenant>/query, GET|POST /t/<tenant>/_revocations, ' +
        'PUT|DELETE /t/<tenant>, GET /_tenants, GET|HEAD /_console/*, /t/<tenant>/_mcp',
    );
    expect(missOf('GET', '/_tenants/more').error.code).to.equal('not_found');
    expect(missOf('GET', '/').error.code).to.equal('not_found');
  });

  it('points a tenant route asked without its tenant to /t/<tenant>/…', () => {
    const miss = missOf('POST', '/query');
    expect(miss.error.code).to.equal('not_found');
    expect(miss.error.hint).to.equal(
      "this test serves a tenant's /query at /t/<tenant>/query: name the tenant (--tenant NAME in fenec's commands)",
    );
  });

  it("answers an unknown route under a tenant name with not_found listing that tenant's routes", () => {
    for (const path of ['/t/acme/nothing', '/t/acme/query/extra', '/t/acme/', '/t/acme/_tenants']) {
      const miss = missOf('POST', path);
      expect(miss.error.code, path).to.equal('not_found');
      expect(miss.error.message, path).to.include(
        "a tenant's routes are POST /t/acme/query, GET|POST /t/acme/_revocations, PUT|DELETE /t/acme, /t/acme/_mcp",
      );
    }
  });

  it('answers a path whose tenant is not a name with invalid_tenant, whatever follows', () => {
    for (const path of ['/t/Acme/query', '/t/Acme/nothing', '/t/a%2Fb/query', '/t/-x', '/t/', '/t//query']) {
      expect(missOf('POST', path).error.code, path).to.equal('invalid_tenant');
    }
  });

  it('answers a known path asked with another method with method_not_allowed and its Allow', () => {
    const miss = missOf('GET', '/t/acme/query');
    expect(miss.error.code).to.equal('method_not_allowed');
    expect(miss.error.message).to.equal('/t/<tenant>/query takes POST, not GET');
    expect(miss.allow).to.equal('POST, OPTIONS');
    expect(missOf('POST', '/t/acme').allow).to.equal('PUT, DELETE, OPTIONS');
    expect(missOf('POST', '/_console/app.js').allow).to.equal('GET, HEAD, OPTIONS');
  });

  it('refuses a route declared twice for one method', () => {
    expect(() => new RouteTable('t', [route(['GET'], '/a', 'x'), route(['GET', 'PUT'], '/a', 'y')])).to.throw(
      'GET /a is declared twice',
    );
  });

  it('says in the catalogue what the table answers: invalid_tenant for a name, not_found for a route', () => {
    expect(CATALOGUE.invalid_tenant.summary).to.not.include('a path that is not');
    expect(CATALOGUE.not_found.summary).to.include('/t/<tenant>/');
    expect(missOf('POST', '/t/acme/other').error).to.be.instanceOf(FenecError).with.property('code', 'not_found');
  });
});
