import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { parseNodes } from '../../router/placement.js';
import { programNodeArgs } from '../integration/processes.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DEPLOY = path.join(ROOT, 'deploy');
const ROUTER_CLI = 'dist/router/cli.js';
const NODE_CLI = 'dist/node/cli/fenec-server.js';
/** A node runs as its command on PATH would: with the Node.js options of fenec-server's #! line (--expose-gc). */
const NODE_COMMAND = ['node', ...programNodeArgs(path.join(ROOT, NODE_CLI)), NODE_CLI];

/** The long flags a program's --help lists. */
function helpFlags(script: string): Set<string> {
  const help = execFileSync(process.execPath, [path.join(ROOT, script), '--help'], { encoding: 'utf8' });
  return new Set([...help.matchAll(/(?:^|\s|,)(--[a-z][a-z0-9-]*)/g)].map((match) => match[1]!));
}

/** A command line's flags and their values (a flag followed by a non-flag takes it as its value). */
function flagsOf(args: readonly string[]): Map<string, string | true> {
  const flags = new Map<string, string | true>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--')) continue;
    const next = args[i + 1];
    if (next !== undefined && !next.startsWith('--')) {
      flags.set(arg, next);
      i++;
    } else {
      flags.set(arg, true);
    }
  }
  return flags;
}

interface ComposeService {
  image?: string;
  command: string[];
  environment: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  build?: { context: string; dockerfile: string };
  depends_on?: string[];
}

const compose = yaml.load(fs.readFileSync(path.join(DEPLOY, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, ComposeService>;
  volumes: Record<string, unknown>;
};
const k8s = ['nodes.yaml', 'routers.yaml', 'nats.yaml'].flatMap(
  (file) =>
    yaml.loadAll(fs.readFileSync(path.join(DEPLOY, 'k8s', file), 'utf8')) as {
      kind: string;
      metadata: { name: string };
    }[],
);
const ofKind = <T>(kind: string): T[] => k8s.filter((doc) => doc.kind === kind) as T[];

describe('deploy/docker-compose.yml', () => {
  const router = compose.services.router!;
  const nodes = Object.entries(compose.services)
    .filter(([, service]) => service.command.includes(NODE_CLI))
    .map(([name, service]) => {
      expect(service.command.slice(0, NODE_COMMAND.length), name).to.deep.equal(NODE_COMMAND);
      return [name, { ...service, command: service.command.slice(NODE_COMMAND.length) }] as const;
    });

  it('runs a router and two tenant nodes, each node with a volume of its own on its --data-dir', () => {
    expect(router.command.slice(0, 2)).to.deep.equal(['node', ROUTER_CLI]);
    expect(nodes).to.have.length(2);
    const volumes = nodes.map(([, service]) => {
      const dataDir = flagsOf(service.command).get('--data-dir');
      const mount = service.volumes!.map((v) => v.split(':')).find(([, target]) => target === dataDir);
      expect(mount, 'a volume mounted on --data-dir').to.not.equal(undefined);
      expect(compose.volumes).to.have.property(mount![0]!);
      return mount![0];
    });
    expect(new Set(volumes).size).to.equal(2);
  });

  it('gives the router a --nodes list naming each node service at its --port', () => {
    const listed = parseNodes(String(flagsOf(router.command).get('--nodes')));
    expect(listed.map((node) => node.url.host).sort()).to.deep.equal(
      nodes.map(([name, service]) => `${name}:${flagsOf(service.command).get('--port')}`).sort(),
    );
    expect(router.depends_on).to.have.members(nodes.map(([name]) => name));
  });

  it("publishes the router's --port only, and mounts the placement file --placement names", () => {
    const flags = flagsOf(router.command);
    expect(router.ports!.map((port) => port.split(':').at(-1))).to.deep.equal([flags.get('--port')]);
    for (const [, service] of nodes) expect(service.ports).to.equal(undefined);
    const placement = router
      .volumes!.map((v) => v.split(':'))
      .find(([, target]) => target === flags.get('--placement'));
    expect(fs.existsSync(path.join(DEPLOY, placement![0]!))).to.equal(true);
  });

  it('runs a three-server NATS JetStream cluster, and the router and every node on it, each node by its name', () => {
    const natsServers = Object.entries(compose.services).filter(([, service]) => service.image?.startsWith('nats:'));
    expect(natsServers).to.have.length(3);
    const clients = natsServers.map(([name]) => `nats://${name}:4222`).join(',');
    for (const [name, service] of natsServers) {
      const flags = flagsOf(service.command);
      expect(flags.get('--jetstream'), name).to.equal(true);
      expect(flags.get('--server_name')).to.equal(name);
      const routes = String(flags.get('--routes')).split(',');
      expect(routes).to.have.members(natsServers.map(([other]) => `nats://${other}:6222`));
      const store = service.volumes!.map((v) => v.split(':')).find(([, target]) => target === flags.get('--store_dir'));
      expect(compose.volumes).to.have.property(store![0]!);
    }
    expect(flagsOf(router.command).get('--nats')).to.equal(clients);
    for (const [name, service] of nodes) {
      expect(flagsOf(service.command).get('--nats'), name).to.equal(clients);
      expect(flagsOf(service.command).get('--node-name'), name).to.equal(name);
      expect(service.depends_on).to.have.members(natsServers.map(([server]) => server));
    }
  });

  it('takes the token and the JWT secret from the environment, for every fenecdb service', () => {
    for (const service of [router, ...nodes.map(([, node]) => node)]) {
      expect(service.environment.FENEC_TOKEN).to.match(/^\$\{FENEC_TOKEN:\?/);
      expect(service.environment.FENEC_JWT_SECRET).to.match(/^\$\{FENEC_JWT_SECRET:\?/);
      // Unset unless the operator names a collector: an empty value is no tracing.
      expect(service.environment.OTEL_EXPORTER_OTLP_ENDPOINT).to.equal('${OTEL_EXPORTER_OTLP_ENDPOINT:-}');
    }
  });

  it('uses only flags the router and fenec-server have', () => {
    const known = helpFlags(ROUTER_CLI);
    for (const flag of flagsOf(router.command).keys()) expect(known, flag).to.include(flag);
    const nodeFlags = helpFlags(NODE_CLI);
    for (const [, service] of nodes)
      for (const flag of flagsOf(service.command).keys()) expect(nodeFlags, flag).to.include(flag);
  });

  it('is a valid compose file to docker-compose config', () => {
    // Debian's docker-compose validates offline; make test installs it (scripts/install-test-tools.sh).
    const version = spawnSync('docker-compose', ['version'], { encoding: 'utf8' });
    expect(version.status, 'docker-compose is missing: run `make test-tools` (scripts/install-test-tools.sh)').to.equal(
      0,
    );
    const env = { ...process.env, FENEC_TOKEN: 't'.repeat(32), FENEC_JWT_SECRET: 's'.repeat(32) };
    const checked = spawnSync('docker-compose', ['-f', path.join(DEPLOY, 'docker-compose.yml'), 'config', '--quiet'], {
      env,
      encoding: 'utf8',
    });
    expect(checked.stderr).to.equal('');
    expect(checked.status).to.equal(0);
    const missing = spawnSync('docker-compose', ['-f', path.join(DEPLOY, 'docker-compose.yml'), 'config', '--quiet'], {
      env: { PATH: process.env.PATH },
      encoding: 'utf8',
    });
    expect(missing.status, 'refused without FENEC_TOKEN').to.not.equal(0);
    expect(missing.stderr).to.include('FENEC_TOKEN');
  });
});

describe('deploy/Dockerfile', () => {
  const dockerfile = fs.readFileSync(path.join(DEPLOY, 'Dockerfile'), 'utf8');

  it('installs as make install does, Faiss, OpenBLAS and libstemmer among the Debian packages', () => {
    expect(dockerfile).to.match(/^RUN bash scripts\/install\.sh/m);
    expect(fs.readFileSync(path.join(ROOT, 'Makefile'), 'utf8')).to.match(/^\tbash scripts\/install\.sh$/m);
    const packages = fs.readFileSync(path.join(ROOT, 'native/debian-packages.txt'), 'utf8').split('\n');
    expect(packages).to.include.members(['libfaiss-dev', 'libopenblas-dev', 'libstemmer-dev']);
  });

  it("runs on Node.js 24 LTS, within package.json's engines", () => {
    expect(dockerfile).to.match(/^FROM node:24-bookworm-slim$/m);
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      engines: { node: string };
    };
    expect(manifest.engines.node).to.equal('>=22');
  });

  it('copies folders that exist and builds the programs the manifests run', () => {
    for (const match of dockerfile.matchAll(/^COPY (.+) \S+$/gm)) {
      for (const source of match[1]!.split(' ')) expect(fs.existsSync(path.join(ROOT, source)), source).to.equal(true);
    }
    expect(dockerfile).to.match(/^RUN npx tsc -p tsconfig\.json/m);
    expect(dockerfile).to.match(/^VOLUME \["\/data"\]/m);
  });
});

describe('deploy/k8s', () => {
  const [headless] = ofKind<Service>('Service').filter(
    (svc) => svc.spec?.clusterIP === 'None' && svc.metadata?.name !== 'nats',
  );
  const [nodes] = ofKind<StatefulSet>('StatefulSet').filter((set) => set.metadata!.name !== 'nats');
  const [routers] = ofKind<Deployment>('Deployment');

  it('holds manifests valid against the Kubernetes schemas', () => {
    const models: Record<string, new (doc: any) => { validate(): void }> = {
      Service,
      StatefulSet,
      Deployment,
      ConfigMap,
    };
    for (const doc of k8s) {
      expect(models, doc.kind).to.have.property(doc.kind);
      new models[doc.kind]!(doc).validate();
    }
  });

  it('runs nodes as a StatefulSet with a volume each on --data-dir, behind a headless Service', () => {
    expect(nodes!.spec!.serviceName).to.equal(headless!.metadata!.name);
    expect(headless!.spec!.selector).to.deep.equal(nodes!.spec!.template.metadata!.labels);
    const container = nodes!.spec!.template.spec!.containers[0]!;
    expect(container.command).to.deep.equal(NODE_COMMAND);
    const claim = nodes!.spec!.volumeClaimTemplates![0]!.metadata!.name;
    expect(container.volumeMounts!.find((m) => m.name === claim)!.mountPath).to.equal(
      flagsOf(container.args!).get('--data-dir'),
    );
    expect(String(container.ports![0]!.containerPort)).to.equal(flagsOf(container.args!).get('--port'));
  });

  it("gives the routers a --nodes list of exactly the StatefulSet's pod DNS names and port", () => {
    const container = routers!.spec!.template.spec!.containers[0]!;
    expect(container.command).to.deep.equal(['node', ROUTER_CLI]);
    const listed = parseNodes(String(flagsOf(container.args!).get('--nodes')));
    const name = nodes!.metadata!.name!;
    const port = flagsOf(nodes!.spec!.template.spec!.containers[0]!.args!).get('--port');
    const expected = [...Array(nodes!.spec!.replicas).keys()].map(
      (i) => `${name}-${i}=http://${name}-${i}.${headless!.metadata!.name}:${port}`,
    );
    expect(listed.map((node) => `${node.name}=${node.url.origin}`)).to.deep.equal(expected);
  });

  it('mounts the placement ConfigMap where --placement looks, and serves the routers through a Service', () => {
    const pod = routers!.spec!.template.spec!;
    const container = pod.containers[0]!;
    const placement = String(flagsOf(container.args!).get('--placement'));
    const mount = container.volumeMounts!.find((m) => placement.startsWith(`${m.mountPath}/`))!;
    const configMap = pod.volumes!.find((v) => v.name === mount.name)!.configMap!.name;
    const [map] = ofKind<ConfigMap>('ConfigMap').filter((c) => c.metadata!.name === configMap);
    expect(map!.data).to.have.property(path.basename(placement));
    const service = ofKind<Service>('Service').find((svc) => svc.metadata!.name === routers!.metadata!.name)!;
    expect(service.spec!.selector).to.deep.equal(pod === undefined ? {} : routers!.spec!.template.metadata!.labels);
    expect(service.spec!.ports![0]!.targetPort).to.equal(container.ports![0]!.name);
    expect(String(container.ports![0]!.containerPort)).to.equal(flagsOf(container.args!).get('--port'));
  });

  it('runs nodes and routers on the NATS StatefulSet, each node named as its pod is in --nodes', () => {
    const [nats] = ofKind<StatefulSet>('StatefulSet').filter((set) => set.metadata!.name === 'nats');
    const natsService = ofKind<Service>('Service').find((svc) => svc.metadata!.name === nats!.spec!.serviceName)!;
    expect(natsService.spec!.clusterIP).to.equal('None');
    const server = nats!.spec!.template.spec!.containers[0]!;
    const clients = [...Array(nats!.spec!.replicas).keys()]
      .map((i) => `nats://nats-${i}.${natsService.metadata!.name}:4222`)
      .join(',');
    expect(String(flagsOf(server.args!).get('--routes')).split(',')).to.deep.equal(
      clients.replaceAll(':4222', ':6222').split(','),
    );
    const node = nodes!.spec!.template.spec!.containers[0]!;
    expect(flagsOf(node.args!).get('--nats')).to.equal(clients);
    expect(flagsOf(node.args!).get('--node-name')).to.equal('$(POD_NAME)');
    expect(node.env!.find((e) => e.name === 'POD_NAME')!.valueFrom!.fieldRef!.fieldPath).to.equal('metadata.name');
    expect(flagsOf(routers!.spec!.template.spec!.containers[0]!.args!).get('--nats')).to.equal(clients);
  });

  it('uses only flags the programs have, and the same secret keys and tracing endpoint everywhere', () => {
    const routerFlags = helpFlags(ROUTER_CLI);
    for (const flag of flagsOf(routers!.spec!.template.spec!.containers[0]!.args!).keys())
      expect(routerFlags, flag).to.include(flag);
    const nodeFlags = helpFlags(NODE_CLI);
    for (const flag of flagsOf(nodes!.spec!.template.spec!.containers[0]!.args!).keys())
      expect(nodeFlags, flag).to.include(flag);
    const envs = [nodes!, routers!].map((set) =>
      set
        .spec!.template.spec!.containers[0]!.env!.filter((e) => e.valueFrom!.fieldRef === undefined)
        .map((e) => {
          const ref = e.valueFrom!.secretKeyRef ?? e.valueFrom!.configMapKeyRef!;
          return `${e.name}<-${e.valueFrom!.secretKeyRef === undefined ? 'configmap' : 'secret'} ${ref.name}/${ref.key}${ref.optional === true ? '?' : ''}`;
        }),
    );
    expect(envs[0]).to.deep.equal(envs[1]);
    expect(envs[0]).to.deep.equal([
      'FENEC_TOKEN<-secret fenecdb/token',
      'FENEC_JWT_SECRET<-secret fenecdb/jwt-secret',
      // Optional: without the ConfigMap the variable is unset and nothing is traced.
      'OTEL_EXPORTER_OTLP_ENDPOINT<-configmap fenec-tracing/otlp-endpoint?',
    ]);
  });
});
