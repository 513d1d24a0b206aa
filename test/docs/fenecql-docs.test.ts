import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { FenecDatabase } from '../../node/database.js';
import { FenecError } from '../../shared/errors.js';
import { tempDir } from '../helpers/temp.js';
import { fenecqlExamples, figureless } from './fenecql-blocks.js';

const DOCS = new URL('../../../docs/', import.meta.url);
const pages = readdirSync(DOCS).filter((name) => name.endsWith('.md'));

describe('the FenecQL examples in docs/', () => {
  for (const page of pages) {
    const examples = fenecqlExamples(page, readFileSync(new URL(page, DOCS), 'utf8'));
    if (examples.length === 0) continue;

    describe(page, () => {
      let temp: ReturnType<typeof tempDir>;
      let db: FenecDatabase;
      before(() => {
        temp = tempDir();
        db = FenecDatabase.open({ file: temp.file('docs.fenec'), readOnly: false, program: 'docs-test' });
      });
      after(() => {
        db.close();
        temp.remove();
      });

      for (const example of examples) {
        it(`line ${example.line}: ${example.statement.split('\n')[0]}`, () => {
          const run = () => db.execute(example.statement, example.params);
          switch (example.expect.kind) {
            case 'error': {
              let code: string | undefined;
              try {
                run();
              } catch (err) {
                expect(err).to.be.instanceOf(FenecError);
                code = (err as FenecError).code;
              }
              expect(code, 'the code it is refused with').to.equal(example.expect.code);
              break;
            }
            case 'answer':
              expect(JSON.parse(JSON.stringify(run()))).to.deep.equal(example.expect.answer);
              break;
            case 'shape':
              expect(figureless(JSON.parse(JSON.stringify(run())))).to.deep.equal(figureless(example.expect.answer));
              break;
            case 'ok':
              run();
              break;
          }
        });
      }
    });
  }

  it('finds examples to run', () => {
    expect(pages.flatMap((page) => fenecqlExamples(page, readFileSync(new URL(page, DOCS), 'utf8')))).to.have.length.above(20);
  });
});
