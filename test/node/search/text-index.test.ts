import { expect } from 'chai';
import { tempDir } from '../../helpers/temp.js';
import { NOTES, Store } from '../../helpers/text-store.js';

describe('text index', () => {
  let temp: ReturnType<typeof tempDir>;
  let store: Store;

  beforeEach(() => {
    temp = tempDir('fenec-text-');
    store = new Store(temp.file('t.fenec'), NOTES);
  });

  afterEach(() => {
    store.close();
    temp.remove();
  });

  describe('kept in step with the rows', () => {
    it('indexes an inserted row', () => {
      const id = store.insert('the deploy runs on fridays', ['ops']);
      expect(store.ids('deploy')).to.deep.equal([id]);
      expect(store.ids('ops')).to.deep.equal([id]);
      store.expectExact();
    });

    it('indexes a put that creates its row, and replaces the words of a put over one', () => {
      store.put(7, 'staging is in eu-west-1', ['ops']);
      expect(store.ids('staging')).to.deep.equal([7]);
      store.put(7, 'production is in us-east-2', ['prod']);
      expect(store.ids('staging ops')).to.deep.equal([]);
      expect(store.ids('production prod')).to.deep.equal([7]);
      store.expectExact();
    });

    it('follows an update of an indexed field, and leaves the index alone for other fields', () => {
      const id = store.insert('the cat watches the fox', null, 2024);
      store.db.prepare('UPDATE "c_notes" SET "text" = ? WHERE "id" = ?').run('the dog sleeps', id);
      expect(store.ids('fox')).to.deep.equal([]);
      expect(store.ids('dog')).to.deep.equal([id]);
      store.expectExact();

      const changes = () => store.db.prepare('SELECT total_changes()').pluck().get() as number;
      const before = changes();
      store.db.prepare('UPDATE "c_notes" SET "year" = 2025, "text" = "text" WHERE "id" = ?').run(id);
      expect(changes() - before, 'only the row itself changed').to.equal(1);
      store.expectExact();
    });

    it('forgets a deleted row, as the sweeper deletes one', () => {
      const keep = store.insert('the fox stays', null, 2030);
      store.insert('the fox expires', ['fox'], 2000);
      store.db.prepare('DELETE FROM "c_notes" WHERE "year" < ?').run(2025);
      expect(store.ids('fox expires')).to.deep.equal([keep]);
      store.expectExact();
    });

    it('rolls its changes back with a rolled-back transaction', () => {
      const a = store.insert('alpha one');
      const b = store.insert('beta two');
      const write = store.db.transaction(() => {
        store.insert('gamma three');
        store.db.prepare('UPDATE "c_notes" SET "text" = ? WHERE "id" = ?').run('alpha changed', a);
        store.db.prepare('DELETE FROM "c_notes" WHERE "id" = ?').run(b);
        store.put(b + 10, 'delta four');
        throw new Error('the statement failed');
      });
      expect(write).to.throw('the statement failed');
      expect(store.ids('alpha one beta two gamma three changed delta four')).to.have.members([a, b]);
      expect(store.ids('gamma changed delta')).to.deep.equal([]);
      store.expectExact();
    });

    it('fills the index from the rows the table holds when it is made (alter add)', () => {
      store.dropIndex();
      const ids = [store.insert('first note', ['x']), store.insert('second note', ['y'])];
      store.createIndex();
      expect(store.ids('note')).to.deep.equal(ids);
      store.expectExact();
    });

    it('is made again over other fields around an alter, with drop then create', () => {
      const id = store.insert('words here', ['tagged']);
      store.dropIndex();
      store.db.exec('ALTER TABLE "c_notes" DROP COLUMN "tags"');
      store.db.exec('ALTER TABLE "c_notes" ADD COLUMN "body" TEXT');
      store.db.prepare('UPDATE "c_notes" SET "body" = ?').run('a body of words');
      store.fields = [
        store.fields[0]!,
        {
          name: 'body',
          type: { kind: 'scalar', scalar: 'text' },
          required: false,
          unique: false,
          annotations: [{ kind: 'text' }],
        },
      ];
      store.createIndex();
      expect(store.ids('body')).to.deep.equal([id]);
      expect(store.ids('tagged')).to.deep.equal([]);
      store.expectExact();
    });

    it('keeps an unindexed field droppable while the index stands', () => {
      store.insert('still searchable', null, 2024);
      store.db.exec('ALTER TABLE "c_notes" DROP COLUMN "year"');
      expect(store.ids('searchable')).to.have.length(1);
      store.expectExact();
    });

    it('leaves no object behind when dropped, and the table writable', () => {
      store.insert('something');
      store.dropIndex();
      const left = store.db.prepare("SELECT name FROM sqlite_schema WHERE name LIKE 't.%'").pluck().all();
      expect(left).to.deep.equal([]);
      store.insert('something else');
      store.db.prepare('DELETE FROM "c_notes"').run();
    });
  });
});
