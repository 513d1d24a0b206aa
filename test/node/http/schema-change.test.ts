import { expect } from 'chai';
import { mayChangeSchema, schemaChangeOf } from '../../../node/http/schema-change.js';

describe('schemaChangeOf', () => {
  it('names the kind and collection of create, drop, alter and compact, in any case and after comments', () => {
    expect(schemaChangeOf('create collection notes (title text)')).to.deep.equal({ statement: 'create', collection: 'notes' });
    expect(schemaChangeOf('CREATE COLLECTION IF NOT EXISTS notes (title text)')).to.deep.equal({ statement: 'create', collection: 'notes' });
    expect(schemaChangeOf('  -- why\n\tdrop collection if exists notes')).to.deep.equal({ statement: 'drop', collection: 'notes' });
    expect(schemaChangeOf('alter collection notes add year int')).to.deep.equal({ statement: 'alter add', collection: 'notes' });
    expect(schemaChangeOf('alter collection notes drop year')).to.deep.equal({ statement: 'alter drop', collection: 'notes' });
    expect(schemaChangeOf('compact notes')).to.deep.equal({ statement: 'compact', collection: 'notes' });
    expect(schemaChangeOf('compact')).to.deep.equal({ statement: 'compact', collection: null });
  });

  it('passes over row statements and schema without parsing them', () => {
    for (const text of ['get notes', 'insert into notes {title: "create"}', 'schema', 'get creates', '-- create\nget notes', 'set notes {x: 1} where id = 1']) {
      expect(mayChangeSchema(text), text).to.equal(false);
      expect(schemaChangeOf(text), text).to.equal(undefined);
    }
  });
});
