// Shared by the wrapper configs that run E2B's vendored JS suites against `cellbox serve`
// (scripts/e2b-tests). The vendored vitest.config.mts files are not used or changed; these
// wrappers give the same test settings plus three adaptations:
// - the tests import the SDK from its source tree (`../src`, `../../src/errors`, ...), which is not
//   vendored: those imports are resolved to the npm package under test (`e2b` or
//   `@e2b/code-interpreter`, pinned in tests/e2b/package.json);
// - the files skips.txt's `[SUITE files]` section lists are left out (run.py counts them);
// - tests/e2b/skips.txt's entries for the suite are skipped, each with its reason (skip.setup.ts);
// - the offline unit tests run without the variables pointing the SDK at cellbox (skip.setup.ts);
// - $E2B_HARNESS_FILES (space-separated, relative to the suite) narrows the files, for --short.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig, type Plugin } from 'vitest/config'

const here = path.dirname(fileURLToPath(import.meta.url))
export const e2bDir = path.resolve(here, '..')

function sdkSourceToPackage(suiteDir: string, pkg: string): Plugin {
  const src = path.join(suiteDir, 'src')
  return {
    name: 'cellbox-e2b-sdk-source-to-package',
    enforce: 'pre',
    async resolveId(source, importer) {
      if (!importer || !source.startsWith('.')) return null
      const target = path.resolve(path.dirname(importer), source)
      if (target !== src && !target.startsWith(src + path.sep)) return null
      // Everything the integration tests take from src/ is exported by the package's index.
      return this.resolve(pkg, path.join(e2bDir, 'package.json'), { skipSelf: true })
    },
  }
}

// The `[SUITE files]` section of skips.txt: whole files left out (`GLOB | REASON`), those that
// cannot even load against the released package (they import or mock the SDK's internals).
export function excludedFiles(suite: string): string[] {
  const globs: string[] = []
  let current: string | undefined
  for (const raw of fs.readFileSync(path.join(e2bDir, 'skips.txt'), 'utf8').split('\n')) {
    const line = raw.trim()
    if (!line || line.startsWith('#')) continue
    if (line.startsWith('[') && line.endsWith(']')) current = line.slice(1, -1).trim()
    else if (current === `${suite} files`) globs.push(line.split(' | ')[0].trim())
  }
  return globs
}

export function suiteConfig(opts: {
  suite: string
  pkg: string
  include: string[]
  exclude: string[]
  // The files that talk to the server; the others run without E2B_API_URL & co. (skip.setup.ts).
  online: string[]
  setupFiles?: string[]
  testTimeout: number
}) {
  const suiteDir = path.join(e2bDir, 'vendor', opts.suite)
  const files = (process.env.E2B_HARNESS_FILES ?? '').split(/\s+/).filter(Boolean)
  return defineConfig({
    root: suiteDir,
    plugins: [sdkSourceToPackage(suiteDir, opts.pkg)],
    // The bare imports of the vendored files (vitest, msw, ...) come from tests/e2b/node_modules.
    resolve: { preserveSymlinks: false },
    cacheDir: process.env.E2B_HARNESS_VITE_CACHE ?? path.join(e2bDir, 'node_modules', '.vite'),
    test: {
      include: files.length ? files : opts.include,
      exclude: [...opts.exclude, ...excludedFiles(opts.suite)],
      globals: false,
      isolate: true,
      testTimeout: opts.testTimeout,
      environment: 'node',
      bail: 0,
      setupFiles: [...(opts.setupFiles ?? []), path.join(here, 'skip.setup.ts')],
      deps: { interopDefault: true },
      env: { ...(process.env as Record<string, string>), E2B_HARNESS_ONLINE: opts.online.join(' ') },
    },
  })
}
