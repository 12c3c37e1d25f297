/** The runtime's version, as `job.started` reports it (a leaf: the decode floor of bench/coldStart.ts writes it too). */
export const RUNTIME_VERSION = "0.1.0"
