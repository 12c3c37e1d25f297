/**
 * `kintsugi serve`'s start-up line: the URL, the allowed hosts in effect, and a warning only when HOST
 * is every interface and KINTSUGI_ALLOWED_HOSTS is unset.
 */
import { describe, expect, test } from "bun:test"
import { ConfigProvider, Effect, Layer, Logger } from "effect"
import { describeServing, logServing } from "../../src/http/servingLine.ts"

const withConfig = (values: Record<string, string>) => Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(values))))

describe("the start-up line", () => {
  const local = ["localhost", "127.0.0.1", "[::1]"]

  test("names the URL and the allowed hosts; warns only for every interface without KINTSUGI_ALLOWED_HOSTS", () => {
    expect(describeServing("127.0.0.1", 7777, [...local, "127.0.0.1"], false)).toEqual({
      message: "serving on http://127.0.0.1:7777/",
      url: "http://127.0.0.1:7777/",
      allowedHosts: "localhost,127.0.0.1,[::1],127.0.0.1",
      warning: undefined
    })
    for (const host of ["0.0.0.0", "::", "[::]"]) {
      const line = describeServing(host, 7777, [...local, host], false)
      expect(line.url).toBe(host === "0.0.0.0" ? "http://0.0.0.0:7777/" : "http://[::]:7777/")
      expect(line.warning).toContain("requests by a LAN address or name get 421 until KINTSUGI_ALLOWED_HOSTS lists them")
    }
    expect(describeServing("0.0.0.0", 7777, ["kintsugi.example.com", "10.0.0.5"], true).warning).toBeUndefined()
    expect(describeServing("10.0.0.5", 7777, [...local, "10.0.0.5"], false).warning).toBeUndefined()
  })

  test("is one log line: info with the URL and hosts, a warning when HOST is every interface and KINTSUGI_ALLOWED_HOSTS unset", async () => {
    const logged = async (config: Record<string, string>, host: string) => {
      const lines: Array<{ level: string; message: unknown; fields: unknown }> = []
      const logger = Logger.make(({ logLevel, message }) => {
        const parts = Array.isArray(message) ? message : [message]
        lines.push({ level: logLevel.label, message: parts[0], fields: JSON.parse(JSON.stringify(parts[1])) })
      })
      await Effect.runPromise(
        Effect.provide(logServing(host, 8080), Layer.merge(withConfig(config), Logger.replace(Logger.defaultLogger, logger)))
      )
      return lines
    }
    const open = await logged({ HOST: "0.0.0.0" }, "0.0.0.0")
    expect(open.length).toBe(1)
    expect(open[0]?.level).toBe("WARN")
    expect(String(open[0]?.message)).toStartWith("serving on http://0.0.0.0:8080/; HOST 0.0.0.0 listens on every interface")
    expect(open[0]?.fields).toEqual({ url: "http://0.0.0.0:8080/", allowedHosts: "localhost,127.0.0.1,[::1],0.0.0.0" })
    const listed = await logged({ HOST: "0.0.0.0", KINTSUGI_ALLOWED_HOSTS: "kintsugi.example.com,10.0.0.5" }, "0.0.0.0")
    expect(listed).toEqual([
      {
        level: "INFO",
        message: "serving on http://0.0.0.0:8080/",
        fields: { url: "http://0.0.0.0:8080/", allowedHosts: "kintsugi.example.com,10.0.0.5" }
      }
    ])
  })
})
