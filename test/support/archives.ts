/**
 * Tar archives written by hand for the workspace tests: any name, type, mode, link target or declared
 * size, hostile ones included (`../x`, `/abs`, links, devices, a size that lies), gzipped or not.
 */
import { gzipSync } from "node:zlib"

export interface TarEntry {
  readonly name: string
  /** The type flag: "0" file (default), "5" folder, "1" hard link, "2" symlink, "3"/"4" devices, "6" FIFO, "x" pax, "L" GNU long name. */
  readonly type?: string
  readonly content?: string | Uint8Array
  readonly linkname?: string
  readonly mode?: number
  /** The size written in the header when it should differ from the content's. */
  readonly declaredSize?: number
  /** The ustar prefix field (a long path's first part). */
  readonly prefix?: string
}

const put = (block: Uint8Array, at: number, length: number, value: string) => {
  const bytes = Buffer.from(value, "utf8")
  block.set(bytes.subarray(0, length), at)
}
const octal = (n: number, length: number) => `${n.toString(8).padStart(length - 1, "0")}\0`

/** One header block for `entry` (content bytes follow, padded to 512). */
export const tarHeader = (entry: TarEntry, size: number): Uint8Array => {
  const h = new Uint8Array(512)
  put(h, 0, 100, entry.name)
  put(h, 100, 8, octal(entry.mode ?? 0o644, 8))
  put(h, 108, 8, octal(0, 8))
  put(h, 116, 8, octal(0, 8))
  put(h, 124, 12, octal(entry.declaredSize ?? size, 12))
  put(h, 136, 12, octal(0, 12))
  put(h, 148, 8, "        ")
  put(h, 156, 1, entry.type ?? "0")
  put(h, 157, 100, entry.linkname ?? "")
  put(h, 257, 6, "ustar\0")
  put(h, 263, 2, "00")
  put(h, 345, 155, entry.prefix ?? "")
  const sum = h.reduce((a, b) => a + b, 0)
  put(h, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `)
  return h
}

/** A tar stream of `entries`, ended by two zero blocks unless `end` is false. */
export const createTar = (entries: ReadonlyArray<TarEntry>, options: { readonly end?: boolean } = {}): Uint8Array => {
  const parts: Array<Uint8Array> = []
  for (const e of entries) {
    const content = typeof e.content === "string" ? Buffer.from(e.content, "utf8") : (e.content ?? new Uint8Array(0))
    parts.push(tarHeader(e, content.length), content, new Uint8Array((512 - (content.length % 512)) % 512))
  }
  if (options.end !== false) parts.push(new Uint8Array(1024))
  return new Uint8Array(Buffer.concat(parts))
}

export const createTarGz = (entries: ReadonlyArray<TarEntry>, options: { readonly end?: boolean } = {}): Uint8Array =>
  new Uint8Array(gzipSync(createTar(entries, options)))

/** A pax extended header that names the next entry `path`. */
export const paxPath = (path: string): TarEntry => {
  const body = (n: number) => `${n} path=${path}\n`
  let length = body(0).length
  while (body(length).length !== length) length = body(length).length
  return { name: "PaxHeader", type: "x", content: body(length) }
}
