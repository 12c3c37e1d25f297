/**
 * The JavaScript that codemode installs in each fresh QuickJS context before the script runs:
 * `tools.<name>(args)`, `print`, `console.log`, and the wrapper that lets a script use `await`.
 */

/**
 * A function expression `(call, print) => { describe, stringProto }`. It defines `tools`, `print` and
 * `console` as read-only globals over the two host functions, which stay in its closure. Tool arguments
 * cross as one JSON string (made with the JSON.stringify captured here); results come back as strings.
 */
export const bootstrapSource = (functions: ReadonlyArray<string>): string => `(function (call, print) {
  "use strict";
  const names = ${JSON.stringify(functions)};
  const stringify = JSON.stringify, toStr = String, ErrorCtor = Error, freeze = Object.freeze, define = Object.defineProperty;
  const lineOf = /script\\.js:(\\d+)/;
  const format = (v) => {
    if (typeof v === "string") return v;
    try { const s = stringify(v, null, 2); if (s !== undefined) return s; } catch {}
    try { return toStr(v); } catch { return "[unprintable value]"; }
  };
  const out = (...args) => { print(args.map(format).join(" ")); };
  const tools = {};
  for (const name of names) tools[name] = async (args) => call(name, stringify(args === undefined ? {} : args));
  const constant = (value) => ({ value, writable: false, enumerable: false, configurable: false });
  define(globalThis, "tools", constant(freeze(tools)));
  define(globalThis, "print", constant(out));
  define(globalThis, "console", constant(freeze({ log: out, info: out, warn: out, error: out, debug: out })));
  const describe = (e) => {
    try {
      if (e instanceof ErrorCtor) {
        const at = lineOf.exec(toStr(e.stack));
        return toStr(e.name) + ": " + toStr(e.message) + (at === null ? "" : " (line " + at[1] + ")");
      }
      return "uncaught " + format(e);
    } catch {
      return "the script threw an exception";
    }
  };
  return { describe, stringProto: String.prototype };
})`

/** The script as the body of an async function (so it may `await`), on its first line so line numbers match. */
export const wrapScript = (script: string): string => `(async () => {${script}\n})()`
