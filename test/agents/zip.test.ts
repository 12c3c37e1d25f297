import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Either } from "effect"
import { zipSync } from "fflate"
import { parseAgentPackage, serializeAgentPackage } from "../../src/agents/AgentPackage.ts"
import { DEFAULT_ZIP_CAPS, readZip, unwrapSingleFolder, writeZip, ZIP_CHUNK_BYTES, ZipRejected } from "../../src/agents/zip.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import { createPackageFiles, valueOf } from "./fixtures.ts"
import {
  createDeflatedZip,
  createStreamingZeroZip,
  createZeroBomb,
  TrackedBytes,
  withCentralName,
  withDeclaredSizes
} from "./zipFixtures.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const MiB = 1 << 20
const text = (s: string) => new TextEncoder().encode(s)

const rejected = async (bytes: Uint8Array, caps?: Parameters<typeof readZip>[1]): Promise<ReadonlyArray<Problem>> => {
  const r = await Effect.runPromise(Effect.either(readZip(bytes, caps)))
  if (Either.isRight(r)) throw new Error(`expected ZipRejected, got ${r.right.length} entries`)
  expect(r.left).toBeInstanceOf(ZipRejected)
  expect(r.left._tag).toBe("ZipRejected")
  return r.left.problems
}
const entries = (bytes: Uint8Array) => Effect.runPromise(readZip(bytes))

describe("readZip: names are checked before anything is inflated", () => {
  test("../../x.md, /abs.md, C:\\x.md, a\\b.md, NUL and duplicate A.md/a.md are all reported at once", async () => {
    const zip = zipSync({
      "../../x.md": text("x"),
      "/abs.md": text("x"),
      "C:\\x.md": text("x"),
      "a\\b.md": text("x"),
      "n\u0000ul.md": text("x"),
      "A.md": text("x"),
      "a.md": text("x"),
      "ok.md": text("x")
    })
    expect(await rejected(zip)).toEqual([
      { path: "../../x.md", message: "`..` segments are not allowed" },
      { path: "/abs.md", message: "absolute paths are not allowed" },
      { path: "C:\\x.md", message: "file name contains a backslash (use / between folders)" },
      { path: "C:\\x.md", message: "drive letters are not allowed" },
      { path: "a\\b.md", message: "file name contains a backslash (use / between folders)" },
      { path: "n\\u0000ul.md", message: "file name contains a NUL character" },
      { path: "a.md", message: 'duplicate of "A.md" (names are compared ignoring case and Unicode normalisation)' }
    ])
  })

  test("duplicates after Unicode NFC folding", async () => {
    const zip = zipSync({ "caf\u00e9.md": text("x"), "cafe\u0301.md": text("x") })
    expect(await rejected(zip)).toEqual([
      { path: "cafe\u0301.md", message: 'duplicate of "caf\u00e9.md" (names are compared ignoring case and Unicode normalisation)' }
    ])
  })

  test("more entries than the cap are refused from the central directory", async () => {
    const files: Record<string, Uint8Array> = {}
    for (let i = 0; i <= DEFAULT_ZIP_CAPS.maxEntries; i++) files[`scripts/s${i}.sh`] = text("x")
    expect(await rejected(zipSync(files))).toEqual([
      { path: "(zip)", message: `more than ${DEFAULT_ZIP_CAPS.maxEntries} entries (${DEFAULT_ZIP_CAPS.maxEntries + 1})` }
    ])
  })

  test("a local header the central directory does not list is refused (smuggled entry)", async () => {
    const zip = withCentralName(zipSync({ "a.md": text("one"), "b.md": text("two") }), "b.md", "c.md")
    expect(await rejected(zip)).toEqual([{ path: "b.md", message: "local file header does not match the central directory" }])
  })

  test("not a ZIP, truncated, and unsupported methods", async () => {
    expect(await rejected(text("just text"))).toEqual([{ path: "(zip)", message: "not a ZIP archive (no end of central directory)" }])
    const zip = zipSync({ "a.md": text("hello ".repeat(1000)) })
    expect(await rejected(zip.subarray(0, 40))).toEqual([{ path: "(zip)", message: "not a ZIP archive (no end of central directory)" }])
    const lzma = zip.slice()
    // Method field of the central directory entry (offset 10) and of the local header (offset 8).
    const cd = new DataView(lzma.buffer).getUint32(lzma.length - 6, true)
    lzma[cd + 10] = 14
    lzma[8] = 14
    expect(await rejected(lzma)).toEqual([{ path: "a.md", message: "compression method 14 is not supported (only stored and deflate)" }])
  })

  test("declared sizes over the caps are refused before inflating", async () => {
    const zip = zipSync({ "big.md": new Uint8Array(2 * MiB) }, { level: 1 })
    expect(await rejected(zip)).toEqual([{ path: "big.md", message: `declares ${2 * MiB} bytes, more than ${MiB}` }])
  })
})

describe("readZip: limits enforced while inflating", () => {
  test("1 GiB of zeros in a ~1 MB zip is stopped after the first pushes, memory bounded", async () => {
    const bomb = createZeroBomb(1024)
    expect(bomb.length).toBeLessThan(2 * MiB)
    const tracked = new TrackedBytes(bomb.length)
    tracked.set(bomb)
    const rssBefore = process.memoryUsage().rss
    // Declared honestly (1 GiB): refused from the central directory without inflating a byte.
    expect(await rejected(tracked)).toEqual([
      { path: "zeros.md", message: `declares ${1024 * MiB} bytes, more than ${MiB}` },
      { path: "(zip)", message: `entries declare ${1024 * MiB} bytes in total, more than ${8 * MiB}` }
    ])
    expect(tracked.furthestChunk(ZIP_CHUNK_BYTES)).toBe(0)
    // Declared as 100 bytes (a lying header): the inflate counter stops it.
    const lying = new TrackedBytes(bomb.length)
    lying.set(withDeclaredSizes(bomb, 100))
    expect(await rejected(lying)).toEqual([{ path: "zeros.md", message: `inflates to more than ${MiB} bytes` }])
    expect(lying.furthestChunk(ZIP_CHUNK_BYTES)).toBeGreaterThan(0)
    expect(lying.furthestChunk(ZIP_CHUNK_BYTES)).toBeLessThanOrEqual(4 * ZIP_CHUNK_BYTES)
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(256 * MiB)
  })

  test("a streaming fflate Zip + ZipDeflate bomb (data descriptors) is stopped by counting", async () => {
    const zip = createStreamingZeroZip(32)
    expect(zip.length).toBeLessThan(MiB)
    const lying = new TrackedBytes(zip.length)
    lying.set(withDeclaredSizes(zip, 10))
    expect(await rejected(lying)).toEqual([{ path: "zeros.md", message: `inflates to more than ${MiB} bytes` }])
    expect(lying.furthestChunk(ZIP_CHUNK_BYTES)).toBeLessThan(zip.length / 4)
  })

  test("the total cap and the ratio cap stop a zip of many small bombs", async () => {
    const files: Record<string, Uint8Array> = {}
    for (let i = 0; i < 12; i++) files[`scripts/z${i}.sh`] = new Uint8Array(MiB - 1)
    const zip = withDeclaredSizes(zipSync(files, { level: 1 }), 1)
    expect(await rejected(zip, { maxRatio: 1e9 })).toEqual([{ path: "(zip)", message: `inflates to more than ${8 * MiB} bytes in total` }])
    expect(await rejected(zip)).toEqual([{ path: "(zip)", message: "compression ratio above 100:1 (a ZIP bomb?)" }])
  })

  test("a hand-built entry with data that does not inflate is a problem, not a crash", async () => {
    const zip = createDeflatedZip("bad.md", Uint8Array.of(0xff, 0xff, 0xff, 0xff), 0, 10)
    const problems = await rejected(zip)
    expect(problems).toHaveLength(1)
    expect(problems[0]?.path === "bad.md" || problems[0]?.path === "(zip)").toBe(true)
  })
})

describe("writeZip / readZip round trip", () => {
  test("export then import gives the same package", async () => {
    const pkg = valueOf(parseAgentPackage(createPackageFiles({ "commands/caf\u00e9.md": "Unicode name\n" })))
    const zip = writeZip(serializeAgentPackage(pkg))
    const files = await entries(zip)
    expect(files.map((f) => f.path)).toEqual(serializeAgentPackage(pkg).map((f) => f.path))
    expect(valueOf(parseAgentPackage(files))).toEqual(pkg)
    // Same package, same bytes (fixed timestamps).
    expect(writeZip(serializeAgentPackage(pkg))).toEqual(zip)
  })

  test("directories are skipped; one enclosing folder can be unwrapped", async () => {
    const zip = zipSync({ "support-bot": { "support-bot.md": text("a"), skills: { triage: { "SKILL.md": text("b") } } } })
    const files = await entries(zip)
    expect(files.map((f) => f.path)).toEqual(["support-bot/support-bot.md", "support-bot/skills/triage/SKILL.md"])
    expect(unwrapSingleFolder(files).map((f) => f.path)).toEqual(["support-bot.md", "skills/triage/SKILL.md"])
    expect(unwrapSingleFolder([{ path: "a.md" }, { path: "x/b.md" }]).map((f) => f.path)).toEqual(["a.md", "x/b.md"])
  })

  test("stored (uncompressed) entries and empty files are read", async () => {
    const zip = zipSync({ "a.md": [text("stored"), { level: 0 }], "empty.md": new Uint8Array(0) })
    expect((await entries(zip)).map((f) => [f.path, new TextDecoder().decode(f.content)])).toEqual([
      ["a.md", "stored"],
      ["empty.md", ""]
    ])
  })
})
