// The linter: typescript-eslint's recommended rules and a 120-column cap. A string is never split to fit: a message
// stays whole so that a user can search the code for the words they were shown.
import stylistic from '@stylistic/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      '.cache/',
      'data/',
      'bench/results/',
      'bench/before/',
      'bench/peers/',
      'native/**/build/',
      'examples/**/node_modules/',
    ],
  },
  ...tseslint.configs.recommended,
  {
    plugins: { '@stylistic': stylistic },
    rules: {
      // Leaving fields out by destructuring (`const { pos, ...rest } = field`) names what is left out.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { ignoreRestSiblings: true, argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@stylistic/max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreUrls: true, ignoreRegExpLiterals: true },
      ],
    },
  },
  {
    // Mocha reads its config (.mocharc.cjs) with require(), before any ES module loads: it takes node:fs so.
    files: ['**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Tests and benches read the server's JSON answers and assert their shapes; typing each answer would restate them.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
