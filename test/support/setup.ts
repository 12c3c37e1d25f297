/** Preloaded by bun test (bunfig.toml): integration tests start processes, servers and databases. */
import { setDefaultTimeout } from "bun:test"

setDefaultTimeout(30_000)
process.env["NO_PROXY"] = ["127.0.0.1", "localhost", process.env["NO_PROXY"]].filter(Boolean).join(",")
