/** Output limits shared by every kernel tool (spec: results are cut to 2000 lines or 50 KB). */
export const MAX_OUTPUT_LINES = 2000
export const MAX_OUTPUT_BYTES = 50 * 1024
/** Longest path or pattern string a tool accepts (security rule 1). */
export const MAX_PATH_INPUT_BYTES = 4096
