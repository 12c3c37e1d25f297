import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { makeJobModels } from "../../src/kernel/PiAiModels.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const custom = (id: string, baseUrl = "http://127.0.0.1:9/v1") => ({
  id,
  api: "openai-completions" as const,
  baseUrl,
  apiKey: "sk-custom-key-123456",
  headers: { "X-Gateway-Token": "gw-token-abcdef" },
  models: [{ id: "m1", contextWindow: 1000, maxTokens: 100 }]
})

describe("makeJobModels", () => {
  test("custom and built-in providers side by side, each under its config id", async () => {
    const { jobModels, problems } = await makeJobModels([custom("gw"), { id: "claude", builtin: "anthropic", apiKey: "sk-ant-api-xyz123" }])
    expect(problems).toEqual([])
    expect(jobModels.find("gw", "m1")?.baseUrl).toBe("http://127.0.0.1:9/v1")
    const claude = jobModels.models.getModels("claude")
    expect(claude.length).toBeGreaterThan(0)
    expect(claude.every((m) => m.provider === "claude")).toBe(true)
    expect(jobModels.secrets).toEqual(expect.arrayContaining(["sk-custom-key-123456", "gw-token-abcdef", "sk-ant-api-xyz123"]))
  })

  test("unknown built-in ids and duplicate config ids are problems with paths", async () => {
    const { problems } = await makeJobModels([custom("gw"), custom("gw"), { id: "x", builtin: "no-such-provider", apiKey: "k" }])
    expect(problems).toEqual([
      { path: "providers.1.id", message: 'duplicate provider id "gw"' },
      { path: "providers.2.builtin", message: 'unknown pi-ai provider "no-such-provider"' }
    ])
  })

  test("egress is pinned to the provider's base URL", async () => {
    const { jobModels } = await makeJobModels([custom("gw", "http://127.0.0.1:9/v1")])
    const model = jobModels.find("gw", "m1")!
    const fetch = jobModels.pinnedFetch(model)
    for (const url of [
      "http://127.0.0.1:10/v1/chat/completions",
      "http://127.0.0.1:9/v2/chat",
      "http://127.0.0.1:9/v10/x",
      "https://127.0.0.1:9/v1/x"
    ]) {
      await expect(fetch(url)).rejects.toThrow("egress refused")
    }
    // Inside the base URL the request goes out (and fails only because nothing listens on port 9).
    await expect(fetch("http://127.0.0.1:9/v1/chat/completions")).rejects.not.toThrow("egress refused")
  })
})
