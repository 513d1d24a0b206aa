/**
 * `@embed(FIELD, …[, model = "…"])`: parsed into its plain tree, printed back to the same text, and refused in its
 * own words when malformed or on a field that is not a vector.
 */
import { expect } from 'chai';
import type { CreateCollectionStmt } from '../../../shared/fenecql/ast.js';
import { parseStatement } from '../../../shared/fenecql/parser.js';
import { printStatement } from '../../../shared/fenecql/print.js';
import { FenecError } from '../../../shared/errors.js';

const annotationsOf = (text: string) =>
  (parseStatement(`create collection c (${text})`) as CreateCollectionStmt).fields.at(-1)!.annotations;

function refusal(text: string): FenecError {
  try {
    parseStatement(`create collection c (${text})`);
  } catch (err) {
    expect(err).to.be.instanceOf(FenecError);
    return err as FenecError;
  }
  throw new Error(`${text} parsed`);
}

describe('@embed', () => {
  it('names the text fields it embeds, and optionally the model', () => {
    expect(annotationsOf('v vector<4> @hnsw(cosine) @embed(title, body)')).to.deep.equal([
      { kind: 'hnsw', metric: 'cosine' },
      { kind: 'embed', fields: ['title', 'body'] },
    ]);
    expect(annotationsOf('v vector<4> @embed(title, model = "nomic-embed-text")')).to.deep.equal([
      { kind: 'embed', fields: ['title'], model: 'nomic-embed-text' },
    ]);
    // A field called model is a field: only `model =` is the option.
    expect(annotationsOf('v vector<4> @embed(model, title)')).to.deep.equal([
      { kind: 'embed', fields: ['model', 'title'] },
    ]);
  });

  it('prints back to the text it parses from', () => {
    for (const text of [
      'create collection c (t text, v vector<4> @hnsw(cosine) @embed(t))',
      'create collection c (t text, b text, v vector<4> @embed(t, b, model = "text-embedding-3-small"))',
    ])
      expect(printStatement(parseStatement(text))).to.equal(text);
  });

  it('is refused with no field, a field twice, a model not a string, or on a field that is not a vector', () => {
    expect(refusal('v vector<4> @embed()').message).to.include('a text field to embed');
    expect(refusal('v vector<4> @embed').message).to.include('@embed names the text fields it embeds');
    expect(refusal('v vector<4> @embed(t, t)').message).to.include('"t" twice');
    expect(refusal('v vector<4> @embed(t, model = 3)').message).to.include('model = "nomic-embed-text"');
    const notVector = refusal('t text @embed(t)');
    expect(notVector.code).to.equal('invalid_annotation');
    expect(notVector.message).to.include('@embed on a vector<N> field');
  });
});
