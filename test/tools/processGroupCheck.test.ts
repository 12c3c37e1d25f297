/**
 * The clean-exit check of a call whose child led its own process group (unconfined `shell`): no group
 * left in the range of pids handed out since the spawn clears it without reading /proc; a group there
 * (the call's, one a member made with setsid, or someone else's) hands the decision to the range scan,
 * which still finds members by group, session and run token.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test"
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type PidClock, ProcessTree, readPidClock } from "../../src/tools/processTree.ts"
import { isAlive } from "../support/processes.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(30_000)

const dir = realpathSync(mkdtempSync(join(tmpdir(), "group-check-")))
const strays: Array<number> = []
afterAll(() => {
  for (const pid of strays) if (isAlive(pid)) process.kill(pid, "SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

let seq = 0
/** The pid `command` wrote to its file, once it is there; killed after the tests. */
const strayPid = async (file: string): Promise<number> => {
  const pid = await until(() => existsSync(file) && Number(readFileSync(file, "utf8").trim()), { what: `a pid in ${file}` })
  strays.push(pid)
  return pid
}

/** Spawns `command` as the runner does unconfined (a new session and group), waits for its exit, returns its tree. */
const exitedTree = async (command: string, leadsGroup = true): Promise<{ tree: ProcessTree; before: PidClock | undefined }> => {
  const before = readPidClock()
  const proc = Bun.spawn(["bash", "-c", command], {
    cwd: dir,
    env: { PATH: "/usr/bin:/bin", KINTSUGI_RUN: "test-group" },
    stdio: ["ignore", "ignore", "ignore"],
    detached: true
  })
  const tree = new ProcessTree(proc.pid, "test-group", leadsGroup)
  await proc.exited
  tree.childExited()
  return { tree, before }
}

test("a call that left nothing is cleared", async () => {
  const { tree, before } = await exitedTree("true")
  expect(before).toBeDefined()
  expect(tree.cleared(before)).toBe(true)
})

test("a process left in the call's group, without the run token, is not cleared", async () => {
  const f = join(dir, `pid-${++seq}`)
  const { tree, before } = await exitedTree(`env -i sleep 1000 >/dev/null 2>&1 & echo $! > ${f}`)
  const pid = await strayPid(f)
  expect(isAlive(pid)).toBe(true)
  expect(tree.cleared(before)).toBe(false)
})

test("a member that left the group with setsid (a group of its own in the range) is not cleared", async () => {
  const f = join(dir, `pid-${++seq}`)
  const { tree, before } = await exitedTree(`(setsid sleep 1000 >/dev/null 2>&1 & echo $! > ${f})`)
  const pid = await strayPid(f)
  // It leads a session and group of its own (once setsid ran): not the call's group.
  await until(
    () => {
      const stat = readFileSync(`/proc/${pid}/stat`, "latin1")
      const [pgrp, session] = stat
        .slice(stat.lastIndexOf(")") + 2)
        .split(" ")
        .slice(2, 4)
      return pgrp === String(pid) && session === String(pid)
    },
    { what: `process ${pid} to lead a session of its own` }
  )
  expect(tree.cleared(before)).toBe(false)
})

test("another process's group in the range (no token, not a descendant) leaves the decision to the range scan, which clears", async () => {
  const before = readPidClock()
  const proc = Bun.spawn(["bash", "-c", "true"], {
    cwd: dir,
    env: { PATH: "/usr/bin:/bin", KINTSUGI_RUN: "test-group" },
    stdio: ["ignore", "ignore", "ignore"],
    detached: true
  })
  const tree = new ProcessTree(proc.pid, "test-group", true)
  await proc.exited
  tree.childExited()
  // Someone else's process group, started after the call's child: its id lies in the range.
  const other = Bun.spawn(["sleep", "1000"], { env: { PATH: "/usr/bin:/bin" }, stdio: ["ignore", "ignore", "ignore"], detached: true })
  strays.push(other.pid)
  expect(isAlive(other.pid)).toBe(true)
  expect(tree.cleared(before)).toBe(true)
  expect(isAlive(other.pid)).toBe(true)
})

test("a child that did not lead its group (git's newSession: false) is never cleared by the group check alone", async () => {
  const f = join(dir, `pid-${++seq}`)
  // Spawned detached all the same, but told otherwise: the range scan decides, and finds the token.
  const { tree, before } = await exitedTree(`sleep 1000 >/dev/null 2>&1 & echo $! > ${f}`, false)
  await strayPid(f)
  expect(tree.cleared(before)).toBe(false)
})
