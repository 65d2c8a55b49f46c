// Skips the tests tests/e2b/skips.txt lists for $E2B_HARNESS_SUITE, with the file's reason
// (`context.skip(note)`; the reason is also put in the test's meta, for scripts/e2b-tests).
// A test's id is `FILE > DESCRIBE... > TEST`, FILE relative to the suite's folder; patterns are
// globs (`*` any run of characters, `?` one).
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, beforeEach } from 'vitest'

type Rule = { pattern: RegExp; reason: string }

function loadRules(file: string, suite: string): Rule[] {
  const rules: Rule[] = []
  let current: string | undefined
  for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim()
    if (!line || line.startsWith('#')) continue
    if (line.startsWith('[') && line.endsWith(']')) {
      current = line.slice(1, -1).trim()
      continue
    }
    if (current !== suite) continue
    const at = line.indexOf(' | ')
    if (at < 0) throw new Error(`${file}: no ' | REASON' in line: ${line}`)
    const glob = line.slice(0, at).trim()
    const source = glob
      .split('')
      .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
      .join('')
    rules.push({ pattern: new RegExp(`^${source}$`, 's'), reason: line.slice(at + 3).trim() })
  }
  return rules
}

const skipsFile = process.env.E2B_HARNESS_SKIPS
const suite = process.env.E2B_HARNESS_SUITE
const rules = skipsFile && suite ? loadRules(skipsFile, suite) : []

export function testId(task: { name: string; suite?: any; file?: any }, root: string): string {
  const names: string[] = []
  let s = task.suite
  while (s && s.suite) {
    names.unshift(s.name)
    s = s.suite
  }
  const file = path.relative(root, task.file?.filepath ?? '')
  return [file, ...names, task.name].join(' > ')
}

// (Destructured: with test.extend fixtures vitest refuses a hook whose argument is not.)
beforeEach(({ task, skip }) => {
  if (!rules.length) return
  const id = testId(task as any, process.env.E2B_HARNESS_SUITE_DIR ?? process.cwd())
  const rule = rules.find((r) => r.pattern.test(id))
  if (rule) {
    ;(task.meta as Record<string, unknown>).cellboxSkip = rule.reason
    skip(`cellbox: ${rule.reason}`)
  }
})

// The suites' offline unit tests (msw mocks, URL resolution) run without the variables that point
// the other tests at cellbox, as in E2B's own CI where they are unset: several check the SDK's
// default URLs. $E2B_HARNESS_ONLINE lists the globs of the files that talk to the server.
const online = (process.env.E2B_HARNESS_ONLINE ?? '').split(/\s+/).filter(Boolean).map(
  (glob) =>
    new RegExp(
      '^' +
        glob
          .split('')
          .map((c) => (c === '*' ? '.*' : c.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
          .join('') +
        '$'
    )
)
const cellboxVariables = ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']
const saved: Record<string, string | undefined> = {}
// eslint-disable-next-line no-empty-pattern
beforeAll(({}, suite) => {
  const file = path.relative(
    process.env.E2B_HARNESS_SUITE_DIR ?? process.cwd(),
    (suite as any).file?.filepath ?? (suite as any).filepath ?? ''
  )
  if (!online.length || online.some((r) => r.test(file))) return
  for (const name of cellboxVariables) {
    saved[name] = process.env[name]
    delete process.env[name]
  }
})
afterAll(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value !== undefined) process.env[name] = value
  }
})
