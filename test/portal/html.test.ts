/** The `html` tag: every interpolation escaped, nested templates and lists kept, `raw` the only way around. */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { escapeHtml, html, joinHtml, raw } from "../../views/html.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

describe("html", () => {
  test("escapes every interpolation, in content and in attributes", () => {
    const evil = `</textarea><script>alert("x")</script>`
    expect(html`<p title="${`" onmouseover="x`}">${evil}</p>`.text).toBe(
      `<p title="&quot; onmouseover=&quot;x">&lt;/textarea&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</p>`
    )
    expect(escapeHtml("a & b ' ` <")).toBe("a &amp; b &#39; &#96; &lt;")
  })

  test("nests templates without escaping them twice, and joins lists", () => {
    const item = (s: string) => html`<li>${s}</li>`
    const list = html`<ul>${["<a>", "b&"].map(item)}</ul>`
    expect(list.text).toBe("<ul><li>&lt;a&gt;</li><li>b&amp;</li></ul>")
    expect(html`<div>${list}</div>`.text).toBe(`<div>${list.text}</div>`)
    expect(html`${[["x", ["<y>"]]]}`.text).toBe("x&lt;y&gt;")
  })

  test("renders nothing for null, undefined and booleans; numbers as text", () => {
    const on = false
    expect(html`a${null}b${undefined}c${on && html`<b>`}d${true}e${3}f${10n}`.text).toBe("abcde3f10")
  })

  test("raw() is the only way to put markup in as is", () => {
    expect(html`${raw("<b>ok</b>")}`.text).toBe("<b>ok</b>")
    expect(html`${"<b>ok</b>"}`.text).toBe("&lt;b&gt;ok&lt;/b&gt;")
    expect(String(html`<i>${"&"}</i>`)).toBe("<i>&amp;</i>")
  })

  test("joinHtml separates items and escapes text items", () => {
    expect(joinHtml(["a", html`<b>b</b>`, "<c>"], ", ").text).toBe("a, <b>b</b>, &lt;c&gt;")
    expect(joinHtml([], ", ").text).toBe("")
  })
})
