/** The portal's plain wording of the services' problem messages (views/forms/plainProblems.ts). */
import { describe, expect, test } from "bun:test"
import { plainMessage } from "../../views/forms/plainProblems.ts"

describe("plainMessage", () => {
  test("internal patterns and schema wording become what to do", () => {
    expect(plainMessage("must match [a-z][a-z0-9-]* (at most 64 characters)")).toBe(
      "must use only lower-case letters, digits and dashes, starting with a letter (at most 64 characters)"
    )
    expect(plainMessage('local skill name "Bad Name" must match [a-z][a-z0-9-]* and be at most 64 characters')).toBe(
      'local skill name "Bad Name" must use only lower-case letters, digits and dashes, starting with a letter (at most 64 characters)'
    )
    expect(plainMessage("Expected an integer, actual NaN")).toBe("enter a whole number")
    expect(plainMessage("must not be empty")).toBe("fill this in")
    expect(plainMessage("is missing")).toBe("fill this in")
  })

  test("messages that are already sentences stay as they are", () => {
    expect(plainMessage('shared skill "x" does not exist')).toBe('shared skill "x" does not exist')
    expect(plainMessage("is required for a new provider")).toBe("is required for a new provider")
  })
})
