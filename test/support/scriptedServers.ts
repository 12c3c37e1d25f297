/**
 * The scripted model servers of the public testing entry (src/testing, `kintsugi-runtime/testing`),
 * re-exported for the suite's imports.
 */
export * from "../../src/testing/scriptedServers.ts"
