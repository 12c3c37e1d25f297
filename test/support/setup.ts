/** Preloaded by bun test (bunfig.toml): keeps loopback out of any HTTP proxy. */
process.env["NO_PROXY"] = ["127.0.0.1", "localhost", process.env["NO_PROXY"]].filter(Boolean).join(",")
