import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { checkOutboundUrl, isPrivateAddress } from "../../src/net/urlPolicy.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const resolver = (map: Record<string, ReadonlyArray<string>>) => async (host: string) => {
  const found = map[host]
  if (found === undefined) throw new Error("ENOTFOUND")
  return found
}
/** Address literals must never reach DNS: this resolver fails the test if asked. */
const noDns = async (host: string): Promise<ReadonlyArray<string>> => {
  throw new Error(`resolved ${host}`)
}

describe("outbound URL policy (MCP servers)", () => {
  test.each([
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "255.255.255.255",
    "224.0.0.1",
    "240.0.0.1",
    "198.18.0.1",
    "192.0.2.1",
    "::1",
    "::",
    "fd00::1",
    "fc00::1",
    "fe80::1",
    "ff02::1",
    "fec0::1",
    "2001:db8::1",
    "100::1",
    "::ffff:10.0.0.1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:a9fe:a9fe",
    "::ffff:0:7f00:1",
    // IPv4-compatible, 6to4, NAT64 (well-known and local-use), Teredo (client XORed), ISATAP.
    "::7f00:1",
    "::a9fe:a9fe",
    "2002:7f00:1::",
    "2002:a9fe:a9fe::1",
    "64:ff9b::7f00:1",
    "64:ff9b::a9fe:a9fe",
    "64:ff9b:1::808:808",
    "2001:0:4136:e378:8000:63bf:80ff:fffe",
    "2001:0:7f00:1:8000:63bf:f7f7:f7f7",
    "2606:4700::5efe:7f00:1",
    "2606:4700::200:5efe:a00:1",
    "not-an-address"
  ])("%s is refused", (ip) => expect(isPrivateAddress(ip)).toBe(true))

  test.each([
    "8.8.8.8",
    "1.1.1.1",
    "172.32.0.1",
    "93.184.215.14",
    "2606:4700:4700::1111",
    "2a00:1450:4001:82b::200e",
    "::ffff:808:808",
    "2002:808:808::1",
    "64:ff9b::808:808",
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7"
  ])("%s is public", (ip) => expect(isPrivateAddress(ip)).toBe(false))

  test.each([
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[0:0:0:0:0:ffff:7f00:1]/",
    "http://[::7f00:1]/",
    "http://[::127.0.0.1]/",
    "http://[2002:7f00:1::]/",
    "http://[2002:a9fe:a9fe::]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[64:ff9b::169.254.169.254]/",
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0177.0.0.1/",
    "http://017700000001/",
    "http://127.1/",
    "http://0x7f.1/",
    "http://0/",
    "http://127.0.0.1./",
    "http://2852039166/",
    "http://0xA9FEA9FE/",
    "http://[fe80::1]/",
    "http://[fd12::1]:8080/mcp",
    "http://[::]/",
    "http://[ff02::1]/",
    "http://255.255.255.255/",
    "http://100.64.0.1/",
    "http://[2001:db8::1]/",
    "http://127%2e0.0.1/",
    "http://１２７.0.0.1/"
  ])("%s is refused without a DNS lookup", async (url) => {
    expect(await checkOutboundUrl(url, false, noDns)).toContain("resolves to a non-public address")
  })

  test.each([
    "http://localhost/",
    "http://localhost./",
    "http://LOCALHOST:3000/",
    "http://app.localhost/",
    "http://App.LocalHost./",
    "http://metadata.google.internal/",
    "http://metadata.google.internal./",
    "http://METADATA.GOOGLE.INTERNAL../",
    "http://metadata/",
    "http://instance-data./",
    "http://localhost.localdomain/"
  ])("%s is a local or metadata host", async (url) => {
    expect(await checkOutboundUrl(url, false, noDns)).toBe("points at a local or metadata host")
  })

  test("public address literals pass without DNS", async () => {
    for (const url of [
      "http://8.8.8.8/",
      "https://[2606:4700:4700::1111]/mcp",
      "http://[::ffff:808:808]/",
      "http://134744072/",
      "http://[2002:808:808::1]/"
    ]) {
      expect({ url, problem: await checkOutboundUrl(url, false, noDns) }).toEqual({ url, problem: undefined })
    }
  })

  test("scheme, credentials, metadata hosts and private resolutions are refused", async () => {
    const dns = resolver({
      "mcp.example.com": ["93.184.216.34"],
      "sneaky.example.com": ["93.184.216.34", "10.0.0.5"],
      "inside.example.com": ["192.168.0.10"]
    })
    expect(await checkOutboundUrl("https://mcp.example.com/mcp", false, dns)).toBeUndefined()
    expect(await checkOutboundUrl("https://mcp.example.com./mcp", false, dns)).toBeUndefined()
    expect(await checkOutboundUrl("ftp://mcp.example.com/", false, dns)).toBe("must be an http or https URL")
    expect(await checkOutboundUrl("https://user:pw@mcp.example.com/", false, dns)).toBe("must not carry credentials (use headers)")
    expect(await checkOutboundUrl("http://169.254.169.254/latest/meta-data", false, dns)).toContain(
      "169.254.169.254 is a link-local address"
    )
    expect(await checkOutboundUrl("http://[::1]:3000/mcp", false, dns)).toContain("::1 is a loopback address")
    // One private address among public ones is enough to refuse (DNS rebinding picks any of them).
    expect(await checkOutboundUrl("https://sneaky.example.com/", false, dns)).toContain("10.0.0.5 is a private address")
    expect(await checkOutboundUrl("https://nowhere.example.com/", false, dns)).toBe("its host does not resolve")
    expect(await checkOutboundUrl("not a url", false, dns)).toBe("is not a URL")
  })

  test("a DNS answer in an embedded IPv6 form is unwrapped too", async () => {
    const dns = resolver({
      "mapped.example.com": ["::ffff:127.0.0.1"],
      "sixtofour.example.com": ["2606:4700:4700::1111", "2002:a9fe:a9fe::1"],
      "empty.example.com": []
    })
    expect(await checkOutboundUrl("https://mapped.example.com/", false, dns)).toContain(
      "::ffff:7f00:1 embeds 127.0.0.1, a loopback address"
    )
    expect(await checkOutboundUrl("https://sixtofour.example.com/", false, dns)).toContain(
      "2002:a9fe:a9fe::1 embeds 169.254.169.254, a link-local address"
    )
    expect(await checkOutboundUrl("https://empty.example.com/", false, dns)).toBe("its host does not resolve")
  })

  test("an admin's allowance lets a server reach a private address, never credentials in the URL", async () => {
    const dns = resolver({ "inside.example.com": ["192.168.0.10"] })
    expect(await checkOutboundUrl("https://inside.example.com/mcp", true, dns)).toBeUndefined()
    expect(await checkOutboundUrl("http://127.0.0.1:9000/mcp", true, dns)).toBeUndefined()
    expect(await checkOutboundUrl("http://localhost:9000/mcp", true, resolver({ localhost: ["127.0.0.1"] }))).toBeUndefined()
    expect(await checkOutboundUrl("https://a:b@inside.example.com/", true, dns)).toBe("must not carry credentials (use headers)")
  })
})
