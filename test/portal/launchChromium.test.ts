/** Which Chromium the browser tests drive, and the bundled one: it runs, and concurrent unpacks never collide. */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chooseChromium, launchChromium } from "./launchChromium.ts"

// Unpacking 200 MB twice at once on a loaded 2-core machine.
setDefaultTimeout(120_000)

const present =
  (...paths: Array<string>) =>
  (path: string) =>
    paths.includes(path)

describe("choosing the test browser", () => {
  test("CHROMIUM_PATH, else Debian's chromium, else chromium on PATH, else the bundled one", () => {
    const all = present("/opt/c/chrome", "/usr/bin/chromium", "/usr/local/bin/chromium")
    expect(chooseChromium({ CHROMIUM_PATH: "/opt/c/chrome" }, all)).toEqual({ source: "CHROMIUM_PATH", path: "/opt/c/chrome" })
    expect(chooseChromium({ PATH: "/usr/local/bin" }, all)).toEqual({ source: "system", path: "/usr/bin/chromium" })
    expect(chooseChromium({ PATH: "/nope:/usr/local/bin" }, present("/usr/local/bin/chromium"))).toEqual({
      source: "system",
      path: "/usr/local/bin/chromium"
    })
    expect(chooseChromium({ PATH: "/usr/local/bin" }, present())).toEqual({ source: "bundled" })
    expect(chooseChromium({}, present())).toEqual({ source: "bundled" })
  })

  test("KINTSUGI_TEST_BROWSER=bundled forces the bundled one; =system refuses to fall back", () => {
    const all = present("/opt/c/chrome", "/usr/bin/chromium")
    expect(chooseChromium({ KINTSUGI_TEST_BROWSER: "bundled", CHROMIUM_PATH: "/opt/c/chrome" }, all)).toEqual({ source: "bundled" })
    expect(chooseChromium({ KINTSUGI_TEST_BROWSER: "system" }, all)).toEqual({ source: "system", path: "/usr/bin/chromium" })
    expect(() => chooseChromium({ KINTSUGI_TEST_BROWSER: "system" }, present())).toThrow(
      /system but Debian's chromium is missing: apt-get install chromium/
    )
  })

  test("a wrong setting names what is wrong instead of falling back", () => {
    expect(() => chooseChromium({ CHROMIUM_PATH: "/nonexistent/chromium" }, present("/usr/bin/chromium"))).toThrow(
      /Chromium not found at \/nonexistent\/chromium \(CHROMIUM_PATH\)/
    )
    expect(() => chooseChromium({ KINTSUGI_TEST_BROWSER: "firefox" }, present())).toThrow(
      /KINTSUGI_TEST_BROWSER=firefox is not one of auto, system, bundled/
    )
  })
})

describe("the bundled Chromium", () => {
  // CI installs Debian's chromium, so without this the fallback would never run there.
  test("launches, lays out text and clicks, even where Debian's chromium is installed", async () => {
    const browser = await launchChromium([], { source: "bundled" })
    try {
      const { version } = (await Bun.file(join(import.meta.dir, "../../node_modules/@sparticuz/chromium/package.json")).json()) as {
        version: string
      }
      expect(browser.version().split(".")[0]).toBe(version.split(".")[0])
      const page = await browser.newPage()
      await page.setContent(`<button onclick="this.textContent='done'">Go</button> <span id="t">some text</span>`)
      await page.getByRole("button", { name: "Go" }).click()
      expect(await page.textContent("button")).toBe("done")
      expect(await page.locator("#t").evaluate((e) => e.getBoundingClientRect().width)).toBeGreaterThan(0)
    } finally {
      await browser.close()
    }
  })

  test("two processes unpacking at once both end with the whole binary; nothing half-written is ever in place", async () => {
    const cache = mkdtempSync(join(tmpdir(), "kintsugi-chromium-race-"))
    try {
      const parent = join(cache, "kintsugi")
      mkdirSync(parent)
      const dead = Bun.spawn(["true"])
      await dead.exited
      mkdirSync(join(parent, `chromium-0.0.0.partial-${dead.pid}-left-over`))
      // With "hold", the process says "written" when its copy is complete and renames it only on a line from stdin.
      const script =
        `const { unpackBundledChromium } = await import(${JSON.stringify(join(import.meta.dir, "launchChromium.ts"))});` +
        `const hold = async () => { console.log("written"); for await (const _ of console) break };` +
        `const r = await unpackBundledChromium(process.argv[1], process.argv[2] === "hold" ? hold : undefined);` +
        `console.log(JSON.stringify({ path: r.path, size: require("node:fs").statSync(r.path).size, env: r.env }))`
      const unpack = (hold: boolean) =>
        Bun.spawn(["bun", "-e", script, cache, hold ? "hold" : "go"], { stdin: "pipe", stdout: "pipe", stderr: "inherit" })
      type Unpacked = { path: string; size: number; env: Record<string, string> }

      const a = unpack(true)
      const reader = a.stdout.getReader()
      const decoder = new TextDecoder()
      let outA = ""
      for (let r = await reader.read(); !r.done; r = await reader.read()) {
        outA += decoder.decode(r.value)
        if (outA.includes("written\n")) break
      }
      expect(outA).toBe("written\n")
      // A's copy is complete but not in place: nothing but partial copies is visible yet.
      expect(readdirSync(parent).filter((n) => !n.includes(".partial-"))).toEqual([])

      // B finds nothing in place, unpacks its own copy and renames it first; A then loses the rename.
      const b = unpack(false)
      const rb = JSON.parse(await new Response(b.stdout).text()) as Unpacked
      expect(await b.exited).toBe(0)
      a.stdin.write("go\n")
      await a.stdin.end()
      for (let r = await reader.read(); !r.done; r = await reader.read()) outA += decoder.decode(r.value)
      expect(await a.exited).toBe(0)
      const ra = JSON.parse(outA.slice("written\n".length)) as Unpacked

      expect(ra).toEqual(rb)
      expect(ra.size).toBe(statSync(ra.path).size)
      expect(readdirSync(parent)).toEqual([ra.path.split("/").at(-2)!])
      const version = Bun.spawnSync([ra.path, "--version"], { env: { ...process.env, ...ra.env } })
      expect(version.stdout.toString()).toMatch(/^Chromium \d+\./)
    } finally {
      rmSync(cache, { recursive: true, force: true })
    }
  })
})
