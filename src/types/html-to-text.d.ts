/**
 * The part of html-to-text 10 (which ships no types) that src/web/htmlText.ts uses. Its options are
 * documented in the package README; only those we pass are typed here.
 */
declare module "html-to-text" {
  export interface SelectorDefinition {
    readonly selector: string
    readonly format?: string
    readonly options?: Readonly<Record<string, unknown>>
  }
  export interface HtmlToTextOptions {
    readonly wordwrap?: number | false | null
    readonly selectors?: ReadonlyArray<SelectorDefinition>
  }
  export function compile(options?: HtmlToTextOptions): (html: string) => string
  export function convert(html: string, options?: HtmlToTextOptions): string
}
