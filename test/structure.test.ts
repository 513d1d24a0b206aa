/**
 * The layout's rules, drawn from the import lines of every .ts file (docs/architecture.md, "Rules
 * the layout keeps"): no import cycle; router/ and node/ share only through shared/, which imports
 * neither; inside node/, each layer imports only the layers below it, in the order architecture.md
 * writes down; no source file over 600 lines but the parser.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FOLDERS = ['shared', 'node', 'router', 'deploy', 'bench', 'test'];
/** The programs' sources (not the tests): held to MAX_LINES. */
const SOURCES = ['shared', 'node', 'router', 'deploy', 'bench'];
const MAX_LINES = 600;
/**
 * The FenecQL parser is one recursive-descent class, a method per grammar rule: split, its rules
 * would call across files for every nested expression.
 */
const LONG_ALLOWED = new Set(['shared/fenecql/parser.ts']);

/** Every .ts file under the folders, relative to the root with '/' separators. */
function sources(): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        // bench/before is another checkout (the build before the worker threads, bench/before.sh), not this tree.
        if (entry.name !== 'node_modules' && rel !== 'bench/before') walk(rel);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) found.push(rel);
    }
  };
  for (const folder of FOLDERS) walk(folder);
  return found.sort();
}

/** The files a file imports (static, re-exported or dynamic), each resolved to its .ts source. */
function importsOf(file: string, text: string): string[] {
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]/gms),
    ...text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
    ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((match) => match[1]!);
  return specifiers
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)))
    .map((target) => target.replace(/\.js$/, '.ts'));
}

/**
 * node/'s layers, bottom first, as docs/architecture.md lists them: the item that begins "Inside
 * node/", its names in backquotes, `→` between layers and `,` between layers of one rank.
 */
function nodeLayers(): Map<string, number> {
  const lines = fs.readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8').split('\n');
  const start = lines.findIndex((l) => l.startsWith('- Inside node/'));
  expect(start, 'docs/architecture.md lists node/’s layers in an item "- Inside node/ …"').to.be.at.least(0);
  let item = lines[start]!;
  for (let i = start + 1; lines[i]?.startsWith('  '); i++) item += ` ${lines[i]!.trim()}`;
  // What follows the colon, less any aside in parentheses.
  const order = item.slice(item.indexOf(':') + 1).replace(/\([^)]*\)/g, '');
  const ranks = new Map<string, number>();
  order.split('→').forEach((rank, i) => {
    for (const [, name] of rank.matchAll(/`([^`]+)`/g)) ranks.set(name!.replace(/\/$/, ''), i);
  });
  return ranks;
}

/** The layer of a node/ file: its folder under node/, or the file itself at node/'s top. */
function layerOf(file: string): string {
  return file.split('/')[1]!;
}

function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (state.get(next) === undefined) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (state.get(file) === undefined) visit(file);
  return found;
}

describe('the layout (docs/architecture.md)', () => {
  const files = sources();
  const graph = new Map(files.map((file) => [file, importsOf(file, fs.readFileSync(path.join(ROOT, file), 'utf8'))]));

  it('reads the import lines it checks', () => {
    expect(files).to.include('node/database.ts');
    expect(graph.get('node/database.ts')).to.include('node/storage/sqlite.ts');
    expect(
      importsOf('a/b.ts', "import type {\n  X,\n} from '../c/d.js';\nconst m = await import('./e.js');"),
    ).to.deep.equal(['c/d.ts', 'a/e.ts']);
  });

  it('finds a cycle', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
    ]);
    expect(cycles(graph)).to.deep.equal([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
  });

  it('has no import cycle', () => {
    expect(cycles(graph).map((cycle) => cycle.join(' → '))).to.deep.equal([]);
  });

  it('keeps router/ and node/ apart: they share only shared/, which imports neither', () => {
    const crossing: string[] = [];
    for (const [file, targets] of graph) {
      const from = file.split('/')[0];
      for (const target of targets) {
        const to = target.split('/')[0];
        if ((from === 'router' && to === 'node') || (from === 'node' && to === 'router'))
          crossing.push(`${file} → ${target}`);
        if (from === 'shared' && to !== 'shared') crossing.push(`${file} → ${target}`);
      }
    }
    expect(crossing).to.deep.equal([]);
  });

  it('imports only downward inside node/, in the order architecture.md gives', () => {
    const ranks = nodeLayers();
    const unlisted = [...new Set(files.filter((f) => f.startsWith('node/')).map(layerOf))].filter((l) => !ranks.has(l));
    expect(unlisted, 'layers of node/ that architecture.md does not place').to.deep.equal([]);
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      if (!file.startsWith('node/')) continue;
      for (const target of targets) {
        if (!target.startsWith('node/') || layerOf(target) === layerOf(file)) continue;
        if (ranks.get(layerOf(target))! >= ranks.get(layerOf(file))!) upward.push(`${file} → ${target}`);
      }
    }
    expect(upward).to.deep.equal([]);
  });

  it(`has no source file over ${MAX_LINES} lines but the parser`, () => {
    const long = files
      .filter((file) => SOURCES.includes(file.split('/')[0]!) && !LONG_ALLOWED.has(file))
      .map((file) => ({ file, lines: fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ file, lines }) => `${file}: ${lines}`);
    expect(long).to.deep.equal([]);
  });
});
