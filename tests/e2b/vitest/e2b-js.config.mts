// E2B's JS SDK suite (tests/e2b/vendor/e2b-js), as its vitest.config.mts's `unit` project runs it.
import { suiteConfig } from './common.mts'

export default suiteConfig({
  suite: 'e2b-js',
  pkg: 'e2b',
  include: ['tests/**/*.test.ts'],
  // As the vendored config: runtimes (browser, cloudflare) and template builds are other projects.
  exclude: ['tests/runtimes/**', 'tests/template/**', 'tests/connectionConfig.test.ts'],
  // Not the vendored tests/globalFetchFallback.setup.ts: it mocks the SDK's internal `src/undici`
  // module for the msw suites, which are offline unit tests left out here (skips.txt).
  online: ['tests/sandbox/*', 'tests/api/info.test.ts', 'tests/api/kill.test.ts', 'tests/api/list.test.ts', 'tests/api/snapshot.test.ts'],
  testTimeout: 30_000,
})
