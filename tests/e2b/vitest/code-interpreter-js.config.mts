// E2B's Code Interpreter JS suite (tests/e2b/vendor/code-interpreter-js), as its vitest.config.mts.
import { suiteConfig } from './common.mts'

export default suiteConfig({
  suite: 'code-interpreter-js',
  pkg: '@e2b/code-interpreter',
  include: ['tests/**/*.test.ts'],
  exclude: ['tests/runtimes/**'],
  online: ['tests/*'],
  testTimeout: 30_000,
})
