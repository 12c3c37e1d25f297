/** Re-export of the scripted servers' HTTP side, which lives in src/testing (`kintsugi-runtime/testing`). */
export * from "../../src/testing/scriptedHttp.ts"
