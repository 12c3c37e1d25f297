/**
 * A fetched page as text for the model: HTML through html-to-text (a maintained converter; scripts,
 * styles and images dropped, links kept as `text [url]`), other text types as they are.
 */
import { compile } from "html-to-text"

const htmlToText = compile({
  wordwrap: false,
  selectors: [
    { selector: "img", format: "skip" },
    { selector: "svg", format: "skip" },
    { selector: "noscript", format: "skip" },
    { selector: "iframe", format: "skip" },
    { selector: "form", format: "skip" },
    { selector: "a", options: { hideLinkHrefIfSameAsText: true, ignoreHref: false } },
    ...(["h1", "h2", "h3", "h4", "h5", "h6"] as const).map((h) => ({ selector: h, options: { uppercase: false } })),
    { selector: "table", format: "dataTable", options: { uppercaseHeaderCells: false } }
  ]
})

/** `<title>` of an HTML page (first one, whitespace collapsed), for the result's header line. */
const titleOf = (html: string): string | undefined => {
  const m = /<title[^>]*>([\s\S]{0,2000}?)<\/title>/i.exec(html)
  const title = m?.[1] === undefined ? undefined : htmlToText(m[1]).replace(/\s+/g, " ").trim()
  return title === undefined || title === "" ? undefined : title
}

export interface PageText {
  readonly title: string | undefined
  readonly text: string
}

/** The page's readable text: HTML (and XHTML) converted, every other text type kept verbatim. */
export const pageText = (body: string, mediaType: string): PageText =>
  mediaType === "text/html" || mediaType === "application/xhtml+xml"
    ? {
        title: titleOf(body),
        text: htmlToText(body)
          .replace(/\n{3,}/g, "\n\n")
          .trim()
      }
    : { title: undefined, text: body }
