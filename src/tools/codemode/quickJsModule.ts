/**
 * QuickJS instances for codemode: the sync release wasm is compiled once per process, and every
 * script gets its own instance with its own fixed-maximum linear memory (freed with it; a broken
 * instance is just dropped).
 */
import { createRequire } from "node:module"
import type { QuickJSSyncVariant, QuickJSWASMModule } from "quickjs-emscripten"

const PAGE = 64 * 1024
/** The wasm module's declared initial memory (16 MB: data, stack, heap start); an import must not be smaller. */
const INITIAL_PAGES = 256

interface Compiled {
  readonly instantiate: (variant: QuickJSSyncVariant) => Promise<QuickJSWASMModule>
  readonly variantWith: (memory: WebAssembly.Memory) => QuickJSSyncVariant
}

let compiled: Promise<Compiled> | undefined

/** Resolved from quickjs-emscripten's own dependencies: the release-sync wasm file it ships. */
const wasmPath = (): string =>
  createRequire(createRequire(import.meta.url).resolve("quickjs-emscripten")).resolve("@jitl/quickjs-wasmfile-release-sync/wasm")

const compile = async (): Promise<Compiled> => {
  const q = await import("quickjs-emscripten")
  const wasmModule = await WebAssembly.compile(await Bun.file(wasmPath()).arrayBuffer())
  return {
    instantiate: q.newQuickJSWASMModuleFromVariant,
    variantWith: (wasmMemory) => q.newVariant(q.RELEASE_SYNC, { wasmModule, wasmMemory })
  }
}

export interface QuickJsInstance {
  readonly module: QuickJSWASMModule
  readonly memory: WebAssembly.Memory
  /** The most bytes `memory` can grow to. */
  readonly maxBytes: number
}

/**
 * A fresh QuickJS instance whose linear memory may grow by at most `growthBytes` (a few ms once the
 * wasm is compiled; the first call compiles it). QuickJS's own memory limit counts no block sizes in
 * this wasm build, so this fixed maximum is what bounds a script's memory: past it, allocations fail
 * inside the VM ("out of memory") and the host is untouched.
 */
export const newQuickJsInstance = async (growthBytes: number): Promise<QuickJsInstance> => {
  const c = compiled ?? (compiled = compile())
  try {
    const { instantiate, variantWith } = await c
    const maximum = INITIAL_PAGES + Math.ceil(growthBytes / PAGE)
    const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum })
    return { module: await instantiate(variantWith(memory)), memory, maxBytes: maximum * PAGE }
  } catch (e) {
    // Let a later call try again rather than caching a failed load.
    if (compiled === c) compiled = undefined
    throw e
  }
}
