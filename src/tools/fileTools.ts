/** The six file tools (read, ls, grep, find on the read-only workspace; write, edit on outDir). */
import { edit } from "./edit.ts"
import { find } from "./find.ts"
import { grep } from "./grep.ts"
import { ls } from "./ls.ts"
import { read } from "./read.ts"
import type { KernelTool } from "./Tool.ts"
import { write } from "./write.ts"

export const fileTools: ReadonlyArray<KernelTool> = [read, ls, grep, find, write, edit]
