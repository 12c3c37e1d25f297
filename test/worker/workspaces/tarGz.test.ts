/**
 * The `.tar.gz` reader: ustar, pax and GNU long names read; slip, absolute paths, links, devices and
 * duplicates refused with every name problem at once; bombs stopped while inflating (by ratio and by
 * size), before the whole archive is inflated; damage and truncation reported.
 */
import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { randomBytes } from "node:crypto"
import { gzipSync } from "node:zlib"
import { readTarGz, TAR_PATH, type TarCaps } from "../../../src/worker/workspaces/tarGz.ts"
import { WORKSPACE_ARCHIVE_CAPS } from "../../../src/worker/workspaces/archiveFiles.ts"
import { createTar, createTarGz, paxPath, type TarEntry } from "../../support/archives.ts"

const caps: TarCaps = WORKSPACE_ARCHIVE_CAPS

const read = (entries: ReadonlyArray<TarEntry>, c: TarCaps = caps) => readTarGz(createTarGz(entries), c)
const problems = (result: ReturnType<typeof readTarGz>) => Either.match(result, { onLeft: (p) => p, onRight: () => [] })
const files = (result: ReturnType<typeof readTarGz>) =>
  Either.match(result, {
    onLeft: (p) => expect(p).toEqual([]) as never,
    onRight: (f) => f.map((x) => ({ path: x.path, text: Buffer.from(x.content).toString(), executable: x.executable }))
  })

describe("reading a .tar.gz", () => {
  test("files in order, `./` removed, folders skipped, the execute bit kept, long names through ustar prefix, pax and GNU", () => {
    const long = `${"deep/".repeat(30)}file.txt`
    const result = read([
      { name: "./", type: "5" },
      { name: "./src/", type: "5" },
      { name: "./src/a.ts", content: "export const a = 1\n" },
      { name: "./run.sh", content: "echo hi\n", mode: 0o755 },
      { name: "empty.txt", content: "" },
      { name: "b.md", prefix: "docs/guide", content: "# B\n" },
      paxPath(long),
      { name: "ignored-by-pax", content: "pax\n" },
      { name: "././@LongLink", type: "L", content: `gnu/${"x".repeat(120)}.txt\0` },
      { name: "ignored-by-gnu", content: "gnu\n" }
    ])
    expect(files(result)).toEqual([
      { path: "src/a.ts", text: "export const a = 1\n", executable: false },
      { path: "run.sh", text: "echo hi\n", executable: true },
      { path: "empty.txt", text: "", executable: false },
      { path: "docs/guide/b.md", text: "# B\n", executable: false },
      { path: long, text: "pax\n", executable: false },
      { path: `gnu/${"x".repeat(120)}.txt`, text: "gnu\n", executable: false }
    ])
  })

  test("slip, absolute paths, links, devices, FIFOs and case duplicates: every name problem at once", () => {
    const result = read([
      { name: "../outside.txt", content: "x" },
      { name: "src/../../etc/passwd", content: "x" },
      { name: "/etc/cron.d/evil", content: "x" },
      { name: "link", type: "2", linkname: "/etc/passwd" },
      { name: "hard", type: "1", linkname: "src/a.ts" },
      { name: "dev", type: "3" },
      { name: "fifo", type: "6" },
      { name: "back\\slash.txt", content: "x" },
      { name: "C:/win.txt", content: "x" }
    ])
    expect(problems(result)).toEqual([
      { path: "../outside.txt", message: "`..` segments are not allowed" },
      { path: "src/../../etc/passwd", message: "`..` segments are not allowed" },
      { path: "/etc/cron.d/evil", message: "absolute paths are not allowed" },
      { path: "link", message: "symbolic links are not allowed (add the file itself)" },
      { path: "hard", message: "hard links are not allowed (add the file itself)" },
      { path: "dev", message: "devices and FIFOs are not allowed" },
      { path: "fifo", message: "devices and FIFOs are not allowed" },
      { path: "back\\slash.txt", message: "file name contains a backslash (use / between folders)" },
      { path: "C:/win.txt", message: "drive letters are not allowed" }
    ])
    // A pax path is checked like any other name.
    expect(problems(read([paxPath("../../pax-escape"), { name: "fine.txt", content: "x" }]))).toEqual([
      { path: "../../pax-escape", message: "`..` segments are not allowed" }
    ])
    expect(
      problems(
        read([
          { name: "A.md", content: "1" },
          { name: "a.md", content: "2" }
        ])
      )
    ).toEqual([{ path: "a.md", message: 'duplicate of "A.md" (names are compared ignoring case and Unicode normalisation)' }])
  })

  test("a bomb by ratio: 64 MiB of zeros stops at the ratio, before the size caps", () => {
    const bomb = new Uint8Array(gzipSync(createTar([{ name: "zeros.bin", content: new Uint8Array(64 * 1024 * 1024) }]), { level: 9 }))
    expect(bomb.length).toBeLessThan(200 * 1024)
    // The ratio stop comes before the size caps (64 MiB of zeros is over the total, too).
    expect(problems(readTarGz(bomb, caps))).toEqual([{ path: TAR_PATH, message: "compression ratio above 100:1 (a gzip bomb?)" }])
  })

  test("a bomb by size: a file, or the whole, larger than the caps (at a ratio below the cap) stops at its header", () => {
    const noise = randomBytes(300 * 1024)
    const small: TarCaps = { ...caps, maxFileBytes: 256 * 1024, maxTotalBytes: 512 * 1024 }
    expect(problems(read([{ name: "big.bin", content: noise }], small))).toEqual([
      { path: "big.bin", message: "is larger than 262144 bytes" }
    ])
    expect(
      problems(
        read(
          [
            { name: "a.bin", content: noise.subarray(0, 200 * 1024) },
            { name: "b.bin", content: noise.subarray(0, 200 * 1024) },
            { name: "c.bin", content: noise.subarray(0, 200 * 1024) }
          ],
          small
        )
      )
    ).toEqual([{ path: TAR_PATH, message: "holds more than 524288 bytes in total" }])
    // A header that lies about its size (claims 1 GiB) is refused before any of its bytes.
    expect(problems(read([{ name: "liar.bin", content: "tiny", declaredSize: 1024 ** 3 }]))).toEqual([
      { path: "liar.bin", message: `is larger than ${caps.maxFileBytes} bytes` }
    ])
    expect(
      problems(
        read(
          Array.from({ length: 6 }, (_, i) => ({ name: `f${i}.txt`, content: "x" })),
          { ...caps, maxEntries: 5 }
        )
      )
    ).toEqual([{ path: TAR_PATH, message: "more than 5 entries" }])
    expect(problems(readTarGz(new Uint8Array(1025).fill(0x1f), { ...caps, maxArchiveBytes: 1024 }))).toEqual([
      { path: TAR_PATH, message: "archive larger than 1024 bytes" }
    ])
  })

  test("damage: not gzip, a bad checksum, a truncated entry", () => {
    expect(problems(readTarGz(new TextEncoder().encode("PK\u0003\u0004 not a tarball"), caps))).toEqual([
      { path: TAR_PATH, message: "is not a gzip file (.tar.gz)" }
    ])
    const tar = createTar([{ name: "a.txt", content: "hello" }])
    tar[0] = "b".charCodeAt(0)
    expect(problems(readTarGz(new Uint8Array(gzipSync(tar)), caps))).toEqual([
      { path: TAR_PATH, message: "damaged archive: a header checksum does not match (not a tar file?)" }
    ])
    const whole = createTar([{ name: "a.txt", content: "x".repeat(2000) }], { end: false })
    expect(problems(readTarGz(new Uint8Array(gzipSync(whole.subarray(0, 1024))), caps))).toEqual([
      { path: TAR_PATH, message: "data ends early (truncated archive)" }
    ])
  })
})
