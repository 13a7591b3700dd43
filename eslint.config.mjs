// Lint: typescript-eslint's recommended rules on the package, its migrations, the sample, the tests
// and the bench. Formatting is Prettier's job (npm run format), so no stylistic rules here.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'build/**',
      'coverage/**',
      'node_modules/**',
      '.tmp/**',
      'test/pack/consumers/**',
      'lib/dashboard/dashboard.assets.generated.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mts'],
    rules: {
      // Nest's DI and pg's typings need `any` in a few signatures; each use is visible in review.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      'no-restricted-syntax': ['error', { selector: 'ExportDefaultDeclaration', message: 'Use named exports.' }],
      eqeqeq: ['error', 'smart'],
    },
  },
  {
    // The dashboard's browser code (type-checked by dashboard-ui/tsconfig.json against the DOM): the
    // browser's globals, and none of Node's.
    files: ['dashboard-ui/**/*.ts'],
    languageOptions: {
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'location',
          'localStorage',
          'fetch',
          'setTimeout',
          'clearTimeout',
          'URLSearchParams',
          'Node',
          'Event',
          'HTMLElement',
          'HTMLInputElement',
          'HTMLButtonElement',
          'SVGSVGElement',
          'console',
        ].map((name) => [name, 'readonly']),
      ),
    },
    rules: {
      'no-restricted-globals': ['error', 'process', 'require', 'module', 'Buffer', '__dirname', '__filename', 'global'],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        globalThis: 'readonly',
        setTimeout: 'readonly',
        URL: 'readonly',
      },
    },
  },
);
