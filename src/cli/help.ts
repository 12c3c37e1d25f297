/**
 * `kintsugi … --help`: one screen per command, drawn from @effect/cli's own help documents. Each option
 * is one row (its names and what it is for); @effect/cli's generic lines ("A user-defined piece of
 * text.", "This setting is optional.") are left out, and the built-in options are listed once, in
 * `kintsugi --help`. Escape codes (bold headings) only when colour is allowed (terminal.ts).
 */
import * as CliConfig from "@effect/cli/CliConfig"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import type * as HelpDoc from "@effect/cli/HelpDoc"
import type * as Span from "@effect/cli/HelpDoc/Span"
import * as Usage from "@effect/cli/Usage"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"

/** A command and its subcommands, by name. */
export interface HelpTree {
  readonly name: string
  readonly descriptor: Descriptor.Command<unknown>
  readonly children: ReadonlyArray<HelpTree>
}

/** What the tree needs of a command: its descriptor (a `Command` has one). */
export interface Described {
  readonly descriptor: Descriptor.Command<unknown>
}

const defaultConfig = CliConfig.defaultConfig
const nameOf = (d: Descriptor.Command<unknown>): string => [...HashSet.values(Descriptor.getNames(d))][0] ?? ""

/**
 * The tree under `root`: its subcommands, and theirs for the `nested` commands (@effect/cli lists
 * one level of subcommands per command).
 */
export const helpTree = (root: Described, nested: ReadonlyArray<Described> = []): HelpTree => {
  const byName = new Map(nested.map((c) => [nameOf(c.descriptor), c.descriptor] as const))
  const node = (descriptor: Descriptor.Command<unknown>, expand: boolean): HelpTree => {
    if (!expand) return { name: nameOf(descriptor), descriptor, children: [] }
    // The declared order is the order of the help's COMMANDS list (the map of subcommands has none).
    const listed = paragraphs(Descriptor.getHelp(descriptor, { ...defaultConfig, showBuiltIns: false }))
    const order = (name: string) => listed.findIndex((p) => p === name || p.startsWith(`${name} `))
    const children = [...HashMap.values(Descriptor.getSubcommands(descriptor))]
      .sort((a, b) => order(nameOf(a)) - order(nameOf(b)))
      .map((child) => {
        const deeper = byName.get(nameOf(child))
        return deeper === undefined ? node(child, false) : node(deeper, true)
      })
    return { name: nameOf(descriptor), descriptor, children }
  }
  return node(root.descriptor, true)
}

/**
 * The path of the command whose help `doc` is (`kintsugi users add -h` → ["users", "add"]): @effect/cli's
 * parse finds the command a help request names and answers with that command's help document; the
 * command is the one whose own document it is. Undefined when no command has it.
 */
export const helpPath = (tree: HelpTree, doc: HelpDoc.HelpDoc, config: CliConfig.CliConfig): ReadonlyArray<string> | undefined => {
  const text = (d: HelpDoc.HelpDoc) => paragraphs(d).join("\n")
  const wanted = text(doc)
  const find = (node: HelpTree, path: ReadonlyArray<string>): ReadonlyArray<string> | undefined => {
    if (text(Descriptor.getHelp(node.descriptor, config)) === wanted) return path
    for (const child of node.children) {
      const found = find(child, [...path, child.name])
      if (found !== undefined) return found
    }
    return undefined
  }
  return find(tree, [])
}

const spanText = (span: Span.Span): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
    case "Highlight":
    case "Strong":
    case "Weak":
      return spanText(span.value)
  }
}

type Block =
  | { readonly kind: "header"; readonly text: string }
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "rows"; readonly rows: ReadonlyArray<readonly [string, string]> }

const paragraphs = (doc: HelpDoc.HelpDoc): Array<string> => {
  switch (doc._tag) {
    case "Empty":
      return []
    case "Header":
    case "Paragraph":
      return [spanText(doc.value)]
    case "Sequence":
      return [...paragraphs(doc.left), ...paragraphs(doc.right)]
    case "Enumeration":
      return doc.elements.flatMap(paragraphs)
    case "DescriptionList":
      return doc.definitions.flatMap(([term, d]) => [spanText(term), ...paragraphs(d)])
  }
}

/**
 * What an option or argument is for: its description without @effect/cli's first paragraph (the
 * value's kind, which the names row shows) and its "optional" and "repeated" sentences.
 */
const purpose = (doc: HelpDoc.HelpDoc): string => {
  const [, ...rest] = paragraphs(doc)
  const own = rest.filter((p) => !p.startsWith("This setting is optional") && !p.startsWith("This option ") && p.trim() !== "")
  const repeated = rest.some((p) => p.startsWith("This option must be repeated") || p.startsWith("This option may be repeated"))
  const text = own.join(" ")
  return repeated && !text.includes("repeatable") ? `${text} (repeatable)` : text
}

const blocks = (doc: HelpDoc.HelpDoc): Array<Block> => {
  switch (doc._tag) {
    case "Empty":
      return []
    case "Header":
      return [{ kind: "header", text: spanText(doc.value) }]
    case "Paragraph":
      return [{ kind: "text", text: spanText(doc.value) }]
    case "Sequence":
      return [...blocks(doc.left), ...blocks(doc.right)]
    case "Enumeration":
      return doc.elements.flatMap(blocks)
    case "DescriptionList":
      // `(-p, --port integer)` as `-p, --port integer` (also when repeated: `(-r, --read text) 1+`).
      return [
        {
          kind: "rows",
          rows: doc.definitions.map(
            ([term, d]) => [spanText(term).replace(/^\((.*)\)(\.\.\.| \d+\+| \d+ - \d+)?$/, "$1$2"), purpose(d)] as const
          )
        }
      ]
  }
}

/** The sections of a help document: heading → its blocks (DESCRIPTION, ARGUMENTS, OPTIONS, COMMANDS). */
const sections = (doc: HelpDoc.HelpDoc): Map<string, Array<Block>> => {
  const out = new Map<string, Array<Block>>()
  let current = ""
  for (const b of blocks(doc)) {
    if (b.kind === "header") current = b.text
    else out.set(current, [...(out.get(current) ?? []), b])
  }
  return out
}

const textOf = (bs: ReadonlyArray<Block> | undefined): string => (bs ?? []).flatMap((b) => (b.kind === "text" ? [b.text] : [])).join(" ")
const rowsOf = (bs: ReadonlyArray<Block> | undefined): Array<readonly [string, string]> =>
  (bs ?? []).flatMap((b) => (b.kind === "rows" ? b.rows : []))

/** The first clause of a description (up to a `.`, `;` or `:` outside parentheses), for a list of commands. */
const firstClause = (text: string): string => {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === "(") depth++
    else if (c === ")") depth = Math.max(0, depth - 1)
    else if (depth === 0 && (c === "." || c === ";" || c === ":") && (i + 1 === text.length || /\s/.test(text[i + 1] ?? "")))
      return text.slice(0, i).trim()
  }
  return text.trim()
}

const wrap = (text: string, width: number): Array<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line)
      line = word
    } else line = line === "" ? word : `${line} ${word}`
  }
  if (line !== "") lines.push(line)
  return lines.length === 0 ? [""] : lines
}

/** Two columns: the term, then its text wrapped beside it (under it when the term is too wide). */
const table = (rows: ReadonlyArray<readonly [string, string]>, width: number): Array<string> => {
  const column = Math.min(30, Math.max(...rows.map(([term]) => term.length)) + 4)
  return rows.flatMap(([term, text]) => {
    const wrapped = wrap(text, Math.max(20, width - column))
    const pad = " ".repeat(column)
    const first = `  ${term}`
    if (first.length + 2 > column) return [first, ...wrapped.map((l) => pad + l)]
    return [first.padEnd(column) + (wrapped[0] ?? ""), ...wrapped.slice(1).map((l) => pad + l)]
  })
}

export interface HelpOptions {
  readonly program: string
  readonly version: string
  readonly config: CliConfig.CliConfig
  /** Bold headings (escape codes): only when colour is allowed on stdout. */
  readonly colour: boolean
  /** The terminal's width (80 when unknown). */
  readonly width: number
}

/** The help of the command at `path` under `tree`, as text ending with a newline. */
export const renderHelp = (tree: HelpTree, path: ReadonlyArray<string>, options: HelpOptions): string => {
  const width = Math.max(60, Math.min(options.width, 100))
  const heading = (t: string) => (options.colour ? `\u001b[1m${t}\u001b[0m` : t)
  let node = tree
  for (const name of path) node = node.children.find((c) => c.name === name) ?? node
  const full = [options.program, ...path].join(" ")
  const own = sections(Descriptor.getHelp(node.descriptor, { ...options.config, showBuiltIns: path.length === 0 }))
  const description = textOf(own.get("DESCRIPTION"))
  const lines: Array<string> = [
    ...wrap(path.length === 0 ? `${full} ${options.version}: ${description}` : `${full}: ${description}`, width),
    "",
    heading("USAGE")
  ]
  if (node.children.length > 0) {
    lines.push(`  ${full} <command> [options]`, "", heading("COMMANDS"))
    lines.push(
      ...table(
        node.children.map(
          (c) => [c.name, firstClause(textOf(sections(Descriptor.getHelp(c.descriptor, options.config)).get("DESCRIPTION")))] as const
        ),
        width
      )
    )
  } else {
    const usage = Usage.enumerate(Descriptor.getUsage(node.descriptor), options.config).map(spanText)
    const prefix = path
      .slice(0, -1)
      .map((p) => `${p} `)
      .join("")
    for (const u of usage)
      lines.push(...wrap(`${options.program} ${prefix}${u}`, width - 4).map((l, i) => (i === 0 ? `  ${l}` : `      ${l}`)))
  }
  const args = rowsOf(own.get("ARGUMENTS"))
  if (args.length > 0) lines.push("", heading("ARGUMENTS"), ...table(args, width))
  const opts = rowsOf(own.get("OPTIONS"))
  if (opts.length > 0) lines.push("", heading(path.length === 0 ? "OPTIONS (every command takes these)" : "OPTIONS"), ...table(opts, width))
  const footer =
    path.length === 0
      ? `\`${options.program} <command> --help\` shows a command's own options.`
      : node.children.length > 0
        ? `\`${full} <command> --help\` shows a command's options. Built-in options: \`${options.program} --help\`.`
        : `Built-in options: \`${options.program} --help\`.`
  lines.push("", ...wrap(footer, width))
  return `${lines.join("\n")}\n`
}
