import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { checkOutboundUrl, isPrivateAddress } from "../../src/providers/urlPolicy.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const resolver = (map: Record<string, ReadonlyArray<string>>) => async (host: string) => {
  const found = map[host]
  if (found === undefined) throw new Error("ENOTFOUND")
  return found
}

describe("outbound URL policy (MCP servers)", () => {
  test.each([
    "127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
    "::1", "fd00::1", "fe80::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1"
  ])("%s is private", (ip) => expect(isPrivateAddress(ip)).toBe(true))

  test.each(["8.8.8.8", "1.1.1.1", "172.32.0.1", "2606:4700:4700::1111"])("%s is public", (ip) => expect(isPrivateAddress(ip)).toBe(false))

  test("scheme, credentials, metadata hosts and private resolutions are refused", async () => {
    const dns = resolver({ "mcp.example.com": ["93.184.216.34"], "sneaky.example.com": ["93.184.216.34", "10.0.0.5"], "inside.example.com": ["192.168.0.10"] })
    expect(await checkOutboundUrl("https://mcp.example.com/mcp", false, dns)).toBeUndefined()
    expect(await checkOutboundUrl("ftp://mcp.example.com/", false, dns)).toBe("must be an http or https URL")
    expect(await checkOutboundUrl("https://user:pw@mcp.example.com/", false, dns)).toBe("must not carry credentials (use headers)")
    expect(await checkOutboundUrl("http://169.254.169.254/latest/meta-data", false, dns)).toContain("private, loopback, link-local or metadata")
    expect(await checkOutboundUrl("http://metadata.google.internal/", false, dns)).toBe("points at a local or metadata host")
    expect(await checkOutboundUrl("http://localhost:3000/mcp", false, dns)).toBe("points at a local or metadata host")
    expect(await checkOutboundUrl("http://[::1]:3000/mcp", false, dns)).toContain("(::1)")
    // One private address among public ones is enough to refuse (DNS rebinding picks any of them).
    expect(await checkOutboundUrl("https://sneaky.example.com/", false, dns)).toContain("10.0.0.5")
    expect(await checkOutboundUrl("https://nowhere.example.com/", false, dns)).toBe("its host does not resolve")
  })

  test("an admin's allowance lets a server reach a private address, never credentials in the URL", async () => {
    const dns = resolver({ "inside.example.com": ["192.168.0.10"] })
    expect(await checkOutboundUrl("https://inside.example.com/mcp", true, dns)).toBeUndefined()
    expect(await checkOutboundUrl("http://127.0.0.1:9000/mcp", true, dns)).toBeUndefined()
    expect(await checkOutboundUrl("https://a:b@inside.example.com/", true, dns)).toBe("must not carry credentials (use headers)")
  })
})
