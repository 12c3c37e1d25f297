/**
 * ZIP fixtures: a hand-built 1 GiB-of-zeros bomb (fast to make), a streaming fflate bomb, and byte
 * patches for lying central directories. Nothing touches the disk.
 */
import zlib from "node:zlib"
import { Zip, ZipDeflate } from "fflate"

const MiB = 1 << 20

const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let o = 0
  for (const p of parts) {
    out.set(p, o)
    o += p.length
  }
  return out
}

const le = (values: ReadonlyArray<[number, 2 | 4]>): Uint8Array => {
  const out = new Uint8Array(values.reduce((n, [, w]) => n + w, 0))
  const view = new DataView(out.buffer)
  let o = 0
  for (const [v, w] of values) {
    if (w === 2) view.setUint16(o, v, true)
    else view.setUint32(o, v >>> 0, true)
    o += w
  }
  return out
}

/** One ZIP with one deflated entry, headers written by hand (sizes may lie). */
export const createDeflatedZip = (name: string, data: Uint8Array, crc: number, size: number, declaredSize = size): Uint8Array => {
  const nameBytes = new TextEncoder().encode(name)
  const local = le([
    [0x04034b50, 4],
    [20, 2],
    [0, 2],
    [8, 2],
    [0, 2],
    [0x21, 2],
    [crc, 4],
    [data.length, 4],
    [declaredSize, 4],
    [nameBytes.length, 2],
    [0, 2]
  ])
  const central = le([
    [0x02014b50, 4],
    [20, 2],
    [20, 2],
    [0, 2],
    [8, 2],
    [0, 2],
    [0x21, 2],
    [crc, 4],
    [data.length, 4],
    [declaredSize, 4],
    [nameBytes.length, 2],
    [0, 2],
    [0, 2],
    [0, 2],
    [0, 2],
    [0, 4],
    [0, 4]
  ])
  const cdOffset = local.length + nameBytes.length + data.length
  const cdSize = central.length + nameBytes.length
  const end = le([
    [0x06054b50, 4],
    [0, 2],
    [0, 2],
    [1, 2],
    [1, 2],
    [cdSize, 4],
    [cdOffset, 4],
    [0, 2]
  ])
  return concat([local, nameBytes, data, central, nameBytes, end])
}

/**
 * `mib` MiB of zeros as one deflated entry, in about mib KiB. Each MiB is deflated once with a full
 * flush (byte-aligned, no back-references across segments), so the same bytes can be repeated;
 * `03 00` is the empty final block. fflate's own deflate needs ~18 s for 1 GiB, too slow for a test.
 */
export const createZeroBomb = (mib: number, declaredSize?: number): Uint8Array => {
  const zeros = new Uint8Array(MiB)
  const segment = zlib.deflateRawSync(zeros, { level: 9, finishFlush: zlib.constants.Z_FULL_FLUSH })
  const data = concat([...Array<Uint8Array>(mib).fill(segment), Uint8Array.of(0x03, 0x00)])
  let crc = 0
  for (let i = 0; i < mib; i++) crc = zlib.crc32(zeros, crc)
  const size = mib * MiB
  return createDeflatedZip("zeros.md", data, crc, size >= 2 ** 32 ? 0xffffffff : size, declaredSize)
}

/** `mib` MiB of zeros through fflate's streaming Zip + ZipDeflate (data descriptors, sizes after the data). */
export const createStreamingZeroZip = (mib: number, name = "zeros.md"): Uint8Array => {
  const chunks: Array<Uint8Array> = []
  const zip = new Zip((err, data) => {
    if (err) throw err
    chunks.push(data)
  })
  const file = new ZipDeflate(name, { level: 1 })
  zip.add(file)
  const block = new Uint8Array(MiB)
  for (let i = 0; i < mib; i++) file.push(block, i === mib - 1)
  zip.end()
  return concat(chunks)
}

/** Offsets of the central directory entries of a ZIP without a comment. */
const centralEntries = (zip: Uint8Array): Array<number> => {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength)
  const end = zip.length - 22
  const count = view.getUint16(end + 10, true)
  let p = view.getUint32(end + 16, true)
  const offsets: Array<number> = []
  for (let i = 0; i < count; i++) {
    offsets.push(p)
    p += 46 + view.getUint16(p + 28, true) + view.getUint16(p + 30, true) + view.getUint16(p + 32, true)
  }
  return offsets
}

/** A copy whose central directory declares `size` uncompressed bytes for every entry (a lying header). */
export const withDeclaredSizes = (zip: Uint8Array, size: number): Uint8Array => {
  const out = zip.slice()
  const view = new DataView(out.buffer)
  for (const p of centralEntries(out)) view.setUint32(p + 24, size, true)
  return out
}

/** A copy whose central directory names `from` as `to` (same length): local headers then disagree. */
export const withCentralName = (zip: Uint8Array, from: string, to: string): Uint8Array => {
  const out = zip.slice()
  const view = new DataView(out.buffer)
  for (const p of centralEntries(out)) {
    const len = view.getUint16(p + 28, true)
    if (new TextDecoder().decode(out.subarray(p + 46, p + 46 + len)) === from) out.set(new TextEncoder().encode(to), p + 46)
  }
  return out
}

/** Bytes that remember every slice taken of them: proof of how far a streaming reader got. */
export class TrackedBytes extends Uint8Array {
  readonly slices: Array<{ begin: number; end: number }> = []
  override subarray(begin = 0, end = this.length): Uint8Array<ArrayBuffer> {
    this.slices.push({ begin, end })
    return super.subarray(begin, end) as Uint8Array<ArrayBuffer>
  }
  /** End of the furthest slice of `size` bytes starting at a multiple of `size` (a push). */
  furthestChunk(size: number): number {
    return Math.max(
      0,
      ...this.slices.filter((s) => s.begin % size === 0 && (s.end - s.begin === size || s.end === this.length)).map((s) => s.end)
    )
  }
}
