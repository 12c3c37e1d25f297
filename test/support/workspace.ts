/**
 * Temp workspace trees for tool tests: real directories under os.tmpdir(), a canonical
 * ResolvedWorkspace for them, test tool services that record events, and a tool runner.
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { type Context, Effect, Either, Layer } from "effect"
import * as JobServices from "../../src/job/JobServices.ts"
import type { KernelTool, ResolvedWorkspace, ToolError, ToolEvent, ToolOutput, ToolServices } from "../../src/tools/Tool.ts"

export interface WorkspaceTree {
  /** workspace.root: holds `ro/` (readOnly[0]) and `out/` (outDir) plus whatever `files` adds. */
  readonly root: string
  readonly ro: string
  readonly out: string
  /** A separate temp directory outside the workspace, for escape targets and canaries. */
  readonly outside: string
  readonly workspace: ResolvedWorkspace
  readonly cleanup: () => Promise<void>
}

const writeFiles = async (base: string, files: Record<string, string>) => {
  for (const [rel, content] of Object.entries(files)) {
    const p = path.join(base, rel)
    await fs.promises.mkdir(path.dirname(p), { recursive: true })
    await fs.promises.writeFile(p, content)
  }
}

/**
 * Creates `root/ro`, `root/out` and a sibling `outside` dir, then writes `files` (paths relative to
 * root) and `outsideFiles` (relative to outside). `readOnly` entries are relative to root (default ["ro"]).
 */
export const createWorkspaceTree = async (
  files: Record<string, string> = {},
  opts: { readonly outsideFiles?: Record<string, string>; readonly readOnly?: ReadonlyArray<string> } = {}
): Promise<WorkspaceTree> => {
  // realpath: os.tmpdir() may itself be a symlink (macOS /tmp), and the workspace must be canonical.
  const root = await fs.promises.realpath(await fs.promises.mkdtemp(path.join(os.tmpdir(), "kintsugi-ws-")))
  const outside = await fs.promises.realpath(await fs.promises.mkdtemp(path.join(os.tmpdir(), "kintsugi-outside-")))
  const ro = path.join(root, "ro")
  const out = path.join(root, "out")
  await fs.promises.mkdir(ro)
  await fs.promises.mkdir(out)
  await writeFiles(root, files)
  await writeFiles(outside, opts.outsideFiles ?? {})
  const workspace: ResolvedWorkspace = { root, readOnly: (opts.readOnly ?? ["ro"]).map((r) => path.join(root, r)), outDir: out }
  const cleanup = async () => {
    await fs.promises.rm(root, { recursive: true, force: true })
    await fs.promises.rm(outside, { recursive: true, force: true })
  }
  return { root, ro, out, outside, workspace, cleanup }
}

/** The per-job services a tool call needs, over a test workspace (provide it to `tool.execute(args)`). */
export type ToolContext = Context.Context<ToolServices>

export interface RecordingContext {
  readonly ctx: ToolContext
  readonly events: Array<ToolEvent>
  readonly progressCalls: () => number
}

/**
 * Tool services over `workspace` (the live Workspace, real files): side events land in `events`
 * (without `seq` and `at`), progress is counted, `remainingMs` always remain.
 */
export const createToolContext = (workspace: ResolvedWorkspace, remainingMs = 60_000, onProgress?: () => void): RecordingContext => {
  const events: Array<ToolEvent> = []
  let progress = 0
  const layer = JobServices.layerTest(workspace, {
    jobId: "00000000-tool-test",
    deliver: (e) => {
      const { seq: _seq, at: _at, ...body } = e
      if (body.type === "source.read" || body.type === "output") events.push(body as ToolEvent)
    },
    remainingMs,
    onProgress: () => {
      progress++
      onProgress?.()
    }
  })
  const ctx = Effect.runSync(Effect.scoped(Layer.build(layer)))
  return { ctx, events, progressCalls: () => progress }
}

/** Runs one call; Right = the tool's output, Left = its ToolError. */
export const runTool = (tool: KernelTool, args: Record<string, unknown>, ctx: ToolContext): Promise<Either.Either<ToolOutput, ToolError>> =>
  Effect.runPromise(Effect.either(tool.execute(args)).pipe(Effect.provide(ctx)))

/** Runs one call that must succeed and returns its text. */
export const runToolText = async (tool: KernelTool, args: Record<string, unknown>, ctx: ToolContext): Promise<string> => {
  const r = await runTool(tool, args, ctx)
  if (Either.isLeft(r)) throw new Error(`${tool.name} failed: ${r.left.message}`)
  return r.right.text
}

/** Runs one call that must fail and returns the ToolError message. */
export const runToolError = async (tool: KernelTool, args: Record<string, unknown>, ctx: ToolContext): Promise<string> => {
  const r = await runTool(tool, args, ctx)
  if (Either.isRight(r)) throw new Error(`${tool.name} unexpectedly succeeded: ${r.right.text.slice(0, 200)}`)
  expectToolError(r.left)
  return r.left.message
}

const expectToolError = (e: ToolError) => {
  if (e._tag !== "ToolError") throw new Error(`expected a ToolError, got ${String(e._tag)}`)
}
