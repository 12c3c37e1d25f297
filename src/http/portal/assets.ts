/**
 * The portal's static files: htmx and its SSE extension from node_modules at versioned URLs, and our stylesheet and script
 * at content-hashed URLs, all cached as immutable. Read once, when the routes are built.
 */
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import type { Assets } from "../../../views/layout.ts"

export interface StaticFile {
  readonly path: string
  readonly body: Uint8Array
  readonly contentType: string
}

const STATIC_DIR = join(import.meta.dir, "..", "..", "..", "views", "static")

const hashed = (name: string, ext: string, contentType: string): StaticFile => {
  const body = new Uint8Array(readFileSync(join(STATIC_DIR, `${name}.${ext}`)))
  const hash = createHash("sha256").update(body).digest("hex").slice(0, 12)
  return { path: `/static/${name}.${hash}.${ext}`, body, contentType }
}

const htmx = (): StaticFile => {
  const file = Bun.fileURLToPath(import.meta.resolve("htmx.org/dist/htmx.min.js"))
  const pkg: unknown = JSON.parse(readFileSync(join(dirname(file), "..", "package.json"), "utf8"))
  const version = pkg !== null && typeof pkg === "object" && "version" in pkg && typeof pkg.version === "string" ? pkg.version : "unknown"
  return { path: `/vendor/htmx-${version}.min.js`, body: new Uint8Array(readFileSync(file)), contentType: "text/javascript; charset=utf-8" }
}

/** htmx's SSE extension (the live job page's rows, server-rendered), at a versioned URL like htmx. */
const sseExtension = (): StaticFile => {
  const file = Bun.fileURLToPath(import.meta.resolve("htmx-ext-sse/dist/sse.min.js"))
  const pkg: unknown = JSON.parse(readFileSync(join(dirname(file), "..", "package.json"), "utf8"))
  const version = pkg !== null && typeof pkg === "object" && "version" in pkg && typeof pkg.version === "string" ? pkg.version : "unknown"
  return {
    path: `/vendor/htmx-ext-sse-${version}.min.js`,
    body: new Uint8Array(readFileSync(file)),
    contentType: "text/javascript; charset=utf-8"
  }
}

export interface PortalAssets {
  readonly urls: Assets
  readonly files: ReadonlyArray<StaticFile>
}

export const loadAssets = (): PortalAssets => {
  const css = hashed("portal", "css", "text/css; charset=utf-8")
  const js = hashed("portal", "js", "text/javascript; charset=utf-8")
  const forms = hashed("forms", "js", "text/javascript; charset=utf-8")
  const vendor = htmx()
  const sse = sseExtension()
  return {
    urls: { css: css.path, js: js.path, formsJs: forms.path, htmx: vendor.path, sse: sse.path },
    files: [css, js, forms, vendor, sse]
  }
}

export const staticResponse = (file: StaticFile): Response =>
  new Response(file.body, {
    headers: {
      "content-type": file.contentType,
      "cache-control": "public, max-age=31536000, immutable",
      "x-content-type-options": "nosniff"
    }
  })
