/**
 * The scripted model servers now live in the public testing entry (src/testing, `kintsugi-runtime/testing`);
 * this re-export keeps the suite's imports working.
 */
export * from "../../src/testing/scriptedServers.ts"
