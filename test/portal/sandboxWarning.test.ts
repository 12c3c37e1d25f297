/** The portal's note on an agent's process tools: unconfined with KINTSUGI_SANDBOX=off, sandboxed otherwise. */
import { describe, expect, test } from "bun:test"
import { unconfinedWarning } from "../../views/components.ts"

describe("process tools note", () => {
  test("KINTSUGI_SANDBOX=off: a warning that shell and git run unconfined", () => {
    const text = unconfinedWarning(undefined, true).text
    expect(text).toContain('role="alert"')
    expect(text).toContain("shell and git run unconfined (<code>KINTSUGI_SANDBOX=off</code>)")
    expect(unconfinedWarning(["read", "git"], true).text).toContain("git runs unconfined")
  })

  test("with the sandbox: says so, and that jobs are refused where it is missing", () => {
    const text = unconfinedWarning(["shell"], false).text
    expect(text).not.toContain("unconfined")
    expect(text).toContain("shell runs in the process sandbox (bubblewrap, or Landlock")
    expect(text).toContain("jobs of this agent are refused")
  })

  test("no process tool granted: nothing", () => {
    expect(unconfinedWarning(["read", "grep"], true).text.trim()).toBe("")
  })
})
