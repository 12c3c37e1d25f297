/** Re-export of the scripted servers' step language, which lives in src/testing (`kintsugi-runtime/testing`). */
export * from "../../src/testing/scriptedSteps.ts"
