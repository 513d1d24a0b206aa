/**
 * kill -9 under mixed writes: writers insert (one row or a batch), put (replace a row whole), set (two
 * fields of one row, or one field of several rows at once) and del over a collection with an @text and
 * an @hnsw field, while the server is killed with SIGKILL at a random moment. After each restart:
 *
 * - every acknowledged write is there, exactly as written (rows compared field by field);
 * - each write in flight when the server died is there whole or not at all: a batch insert all its
 *   rows or none, a set all its fields on all its rows or none — never half;
 * - no row is there that nobody wrote;
 * - `match` finds each row changed this round by its newest word, and not by a word it no longer holds;
 *   `near` finds it by its newest vector at distance 0, and no row answers at distance 0 for a vector
 *   no row holds any more (a stale graph entry would);
 * - the full-text index counts every row.
 */
import * as path from 'node:path';
import { expect } from 'chai';
import { request, Sandbox, type Reply, type ServerProcess } from '../integration/processes.js';
import { report, scaled, SEED, seeded } from './harness.js';

const ROUNDS = scaled(2, 15);
const WRITERS = 3;
/** Rows checked by match and near each round besides the ones the round changed. */
const SAMPLE = scaled(10, 40);
const TOKEN = 'crash-test-token';

interface Row {
  readonly id: number;
  readonly k: string;
  readonly title: string;
  readonly n: number;
  readonly v: readonly number[];
}
type Fields = Omit<Row, 'id'>;

/** A write sent but not answered when the server died: it may have happened, whole, or not at all. */
type InFlight =
  | { readonly kind: 'insert'; readonly rows: readonly Fields[] }
  | { readonly kind: 'put'; readonly row: Row }
  | {
      readonly kind: 'set';
      readonly ids: readonly number[];
      readonly change: Partial<Fields>;
      readonly statement: string;
    }
  | { readonly kind: 'del'; readonly id: number };

describe('reliability: kill -9 under mixed writes', function () {
  this.timeout(scaled(60_000, 300_000));
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  it(`keeps every acknowledged write and no half-write over ${ROUNDS} rounds, rows, match and near alike`, async () => {
    const random = seeded(SEED);
    const file = path.join(sandbox.dir(), 'crash.fenec');
    const start = (): Promise<ServerProcess> => sandbox.startServer(['--file', file, '--http-token', TOKEN]);
    const send = (server: ServerProcess, statement: string, params: readonly unknown[] = []): Promise<Reply> =>
      request(server.url, {
        method: 'POST',
        path: '/query',
        timeoutMs: 10_000,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ statement, params }),
      });
    const ok = async (server: ServerProcess, statement: string, params: readonly unknown[] = []): Promise<any> => {
      const reply = await send(server, statement, params);
      expect(reply.status, `${statement}: ${reply.text}`).to.equal(200);
      return reply.json;
    };

    let server = await start();
    await ok(server, 'create collection notes (k text @hash, title text @text, n int, v vector<4> @hnsw(l2))');
    /** What the database must hold: every acknowledged write applied. */
    const model = new Map<number, Row>();
    let version = 0;
    /**
     * A fresh word and vector for each version of a row: each is held by one row at most, ever. The
     * vector spells the version out whole (a full run passes 10 403 versions, where the first two
     * coordinates alone would repeat: two rows at distance 0, and near answering the lower id).
     */
    const fresh = (writer: number): Pick<Fields, 'title' | 'n' | 'v'> => {
      version += 1;
      return {
        title: `w${writer}x${version}q note`,
        n: version,
        v: [version % 101, Math.floor(version / 101) % 103, writer, 1 + Math.floor(version / 10_403)],
      };
    };
    const totals = { acknowledged: 0, inFlight: 0, inFlightApplied: 0, rowsChecked: 0, matchChecks: 0, nearChecks: 0 };

    for (let round = 0; round < ROUNDS; round += 1) {
      const inFlight: InFlight[] = [];
      /** Words and vectors no row may answer for after this round (held before, replaced or deleted since). */
      const gone: Array<{ title?: string; v?: readonly number[] }> = [];
      const touched = new Set<number>();
      let alive = true;

      const writer = async (w: number): Promise<void> => {
        const mine = (): Row[] => [...model.values()].filter((row) => row.k.startsWith(`w${w}-`));
        while (alive) {
          const rows = mine();
          const dice = random();
          let op: InFlight;
          let statement: string;
          let params: unknown[];
          if (rows.length < 3 || dice < 0.35) {
            const batch = [...Array(1 + Math.floor(random() * 4)).keys()].map((i) => ({
              k: `w${w}-${version + 1}-${i}`,
              ...fresh(w),
            }));
            op = { kind: 'insert', rows: batch };
            // The rows as JSON literals: an insert takes an object or an array of them, not a parameter.
            statement = `insert into notes ${JSON.stringify(batch)}`;
            params = [];
          } else {
            const row = rows[Math.floor(random() * rows.length)]!;
            if (dice < 0.55) {
              const replacement: Row = { id: row.id, k: row.k, ...fresh(w) };
              op = { kind: 'put', row: replacement };
              statement = `put notes ${JSON.stringify(replacement)}`;
              params = [];
            } else if (dice < 0.72) {
              const { title, n } = fresh(w);
              op = { kind: 'set', ids: [row.id], change: { title, n }, statement: 'one' };
              statement = 'set notes {title: $1, n: $2} where id = $3';
              params = [title, n, row.id];
            } else if (dice < 0.82) {
              const ids = rows.slice(0, 3).map((r) => r.id);
              op = { kind: 'set', ids, change: {}, statement: 'n + 1000' };
              statement = 'set notes {n: n + 1000} where id in $1';
              params = [ids];
            } else {
              op = { kind: 'del', id: row.id };
              statement = 'del notes where id = $1';
              params = [row.id];
            }
          }
          let reply: Reply;
          try {
            reply = await send(server, statement, params);
          } catch {
            // The server died with this write sent (or about to be): it may or may not have happened.
            inFlight.push(op);
            return;
          }
          expect(reply.status, `${statement} ${JSON.stringify(params)}: ${reply.text}`).to.equal(200);
          totals.acknowledged += 1;
          applyAcknowledged(op, reply.json);
        }
      };

      /** Takes a write that happened into the model; `inserted` are the rows an insert made, with their ids. */
      const apply = (op: InFlight, inserted: readonly Row[]): void => {
        if (op.kind === 'insert') {
          for (const row of inserted) {
            model.set(row.id, row);
            touched.add(row.id);
          }
        } else if (op.kind === 'put') {
          gone.push(model.get(op.row.id)!);
          model.set(op.row.id, op.row);
          touched.add(op.row.id);
        } else if (op.kind === 'set') {
          for (const id of op.ids) {
            const before = model.get(id)!;
            if (op.change.title !== undefined) gone.push({ title: before.title });
            model.set(id, applySet(before, op));
            touched.add(id);
          }
        } else {
          gone.push(model.get(op.id)!);
          model.delete(op.id);
        }
      };

      const applyAcknowledged = (op: InFlight, answer: { ids?: number[]; count?: number }): void => {
        if (op.kind === 'insert') expect(answer.ids).to.have.length(op.rows.length);
        else if (op.kind === 'set') expect(answer.count).to.equal(op.ids.length);
        else if (op.kind === 'del') expect(answer.count).to.equal(1);
        apply(op, op.kind === 'insert' ? op.rows.map((fields, i) => ({ id: answer.ids![i]!, ...fields })) : []);
      };

      const killAfterMs = 150 + Math.floor(random() * scaled(750, 1850));
      const writers = [...Array(WRITERS).keys()].map((w) => writer(w));
      await new Promise((resolve) => setTimeout(resolve, killAfterMs));
      await sandbox.kill(server.child);
      alive = false;
      await Promise.all(writers);

      server = await start();
      const actual = new Map<number, Row>();
      for (const row of (await ok(server, 'get notes select * order id limit 1000000')).rows as Row[]) {
        actual.set(row.id, { id: row.id, k: row.k, title: row.title, n: row.n, v: row.v });
      }

      // Each write in flight: whole or not at all; the model takes what the file says.
      for (const op of inFlight) {
        totals.inFlight += 1;
        const applied = resolveInFlight(op, model, actual);
        if (!applied) continue;
        totals.inFlightApplied += 1;
        apply(op, op.kind === 'insert' ? [...actual.values()].filter((row) => op.rows.some((r) => r.k === row.k)) : []);
      }

      // Every acknowledged write, and nothing else.
      expect([...actual.keys()], `round ${round}: the ids after the restart`).to.deep.equal(
        [...model.keys()].sort((a, b) => a - b),
      );
      for (const [id, row] of model) expect(actual.get(id), `round ${round}: row ${id}`).to.deep.equal(row);
      totals.rowsChecked += model.size;

      // The indexes: every row changed this round, and a sample of the others, by its word and its vector.
      const others = [...model.keys()].filter((id) => !touched.has(id));
      const checked = [...touched].filter((id) => model.has(id));
      for (let i = 0; i < SAMPLE && others.length > 0; i += 1)
        checked.push(others.splice(Math.floor(random() * others.length), 1)[0]!);
      for (const id of checked) {
        const row = model.get(id)!;
        const word = row.title.split(' ')[0]!;
        const found = await ok(server, 'get notes select id match title $1', [word]);
        expect(
          found.rows.map((r: Row) => r.id),
          `round ${round}: match ${word}`,
        ).to.deep.equal([id]);
        const near = await ok(server, 'get notes select id near v $1 limit 1', [row.v]);
        expect(near.rows[0], `round ${round}: near ${JSON.stringify(row.v)}`).to.deep.include({ id, _score: 1 });
        totals.matchChecks += 1;
        totals.nearChecks += 1;
      }
      for (const old of gone) {
        if (old.title !== undefined) {
          const word = old.title.split(' ')[0]!;
          expect(
            (await ok(server, 'get notes select id match title $1', [word])).rows,
            `round ${round}: match ${word}, a word no row holds`,
          ).to.deep.equal([]);
          totals.matchChecks += 1;
        }
        if (old.v !== undefined) {
          const near = await ok(server, 'get notes select id near v $1 limit 1', [old.v]);
          if (near.rows.length > 0)
            expect(
              near.rows[0]._score,
              `round ${round}: near ${JSON.stringify(old.v)}, a vector no row holds`,
            ).to.be.below(1);
          totals.nearChecks += 1;
        }
      }
      expect(
        (await ok(server, 'get notes match title "note" limit 1000000 count')).count,
        `round ${round}: match counts every row`,
      ).to.equal(model.size);
    }
    await sandbox.kill(server.child);
    report(
      'kill -9',
      `${ROUNDS} rounds, ${WRITERS} writers, ${totals.acknowledged} acknowledged writes all kept, ` +
        `${totals.inFlight} writes in flight at the kill (${totals.inFlightApplied} whole, the rest not at all, none half), ` +
        `${totals.rowsChecked} row checks, ${totals.matchChecks} match and ${totals.nearChecks} near checks, ${model.size} rows at the end`,
    );
  });
});

function applySet(row: Row, op: Extract<InFlight, { kind: 'set' }>): Row {
  return op.statement === 'n + 1000' ? { ...row, n: row.n + 1000 } : { ...row, ...op.change };
}

/**
 * Whether a write in flight happened, from the file as reopened: all of it or none of it, else the
 * test fails naming the half it found.
 */
function resolveInFlight(op: InFlight, model: ReadonlyMap<number, Row>, actual: ReadonlyMap<number, Row>): boolean {
  const same = (a: Row | undefined, b: Row | undefined): boolean => JSON.stringify(a) === JSON.stringify(b);
  const states: boolean[] = [];
  if (op.kind === 'insert') {
    for (const fields of op.rows) {
      const found = [...actual.values()].filter((row) => row.k === fields.k);
      expect(found.length, `insert in flight: rows of key ${fields.k}`).to.be.at.most(1);
      if (found.length === 1) expect({ ...found[0], id: undefined }).to.deep.equal({ ...fields, id: undefined });
      states.push(found.length === 1);
    }
  } else if (op.kind === 'put') {
    const now = actual.get(op.row.id);
    expect(
      same(now, op.row) || same(now, model.get(op.row.id)),
      `put in flight on ${op.row.id}: ${JSON.stringify(now)}`,
    ).to.equal(true);
    states.push(same(now, op.row) && !same(op.row, model.get(op.row.id)));
  } else if (op.kind === 'set') {
    for (const id of op.ids) {
      const before = model.get(id)!;
      const after = applySet(before, op);
      const now = actual.get(id);
      expect(
        same(now, after) || same(now, before),
        `set in flight on ${id}: ${JSON.stringify(now)}, neither ${JSON.stringify(before)} nor ${JSON.stringify(after)}`,
      ).to.equal(true);
      states.push(same(now, after));
    }
  } else {
    const now = actual.get(op.id);
    expect(now === undefined || same(now, model.get(op.id)), `del in flight on ${op.id}`).to.equal(true);
    states.push(now === undefined);
  }
  expect(new Set(states).size, `${op.kind} in flight was half done: ${JSON.stringify(states)}`).to.equal(1);
  return states[0]!;
}
