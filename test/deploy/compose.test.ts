/**
 * deploy/compose.yaml against the code and docs/operations.md, so neither drifts: 2 API and 3 worker
 * processes of the repository's image on one PostgreSQL, each running the Dockerfile's command with a
 * `--role` the CLI accepts; every variable it sets is one the code reads through Config (a secret as
 * its `_FILE` form, naming a mounted secret); the job roots are one volume every process mounts; the
 * operations page names each role and variable.
 */
import { describe, expect, test } from "bun:test"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { SECRET_VARIABLES } from "../../src/cli/processSecrets.ts"
import { SERVE_ROLES } from "../../src/http/serveRole.ts"

const REPO = join(import.meta.dir, "..", "..")
const read = (path: string) => readFileSync(join(REPO, path), "utf8")

interface Service {
  readonly image?: string
  readonly build?: { readonly context: string; readonly dockerfile: string }
  readonly command?: ReadonlyArray<string>
  readonly environment?: Readonly<Record<string, string>>
  readonly secrets?: ReadonlyArray<string>
  readonly volumes?: ReadonlyArray<string>
  readonly depends_on?: Readonly<Record<string, { readonly condition: string }>>
}
interface Compose {
  readonly services: Readonly<Record<string, Service>>
  readonly secrets: Readonly<Record<string, { readonly file: string }>>
  readonly volumes: Readonly<Record<string, unknown>>
}

const compose = Bun.YAML.parse(read("deploy/compose.yaml")) as Compose
const kintsugi = Object.entries(compose.services).filter(([, s]) => s.build !== undefined)
const roleOf = (s: Service) => s.command?.[s.command.indexOf("--role") + 1]

/** Every TypeScript source under src/, as one text: where the Config reads are. */
const sources = (dir: string): string =>
  readdirSync(dir)
    .map((name) => {
      const path = join(dir, name)
      return statSync(path).isDirectory() ? sources(path) : name.endsWith(".ts") ? readFileSync(path, "utf8") : ""
    })
    .join("\n")
const src = sources(join(REPO, "src"))
const readByConfig = (name: string) => new RegExp(`Config\\.\\w+\\(\\s*"${name}"`).test(src)

describe("deploy/compose.yaml", () => {
  test("2 API and 3 worker processes of the repository's image, running its command with a role the CLI accepts, and PostgreSQL", () => {
    const dockerCmd = JSON.parse(/^CMD (\[.*\])$/m.exec(read("Dockerfile"))?.[1] ?? "[]") as Array<string>
    expect(dockerCmd).toEqual(["bun", "src/cli.ts", "serve"])
    for (const [name, s] of kintsugi) {
      expect(s.build).toEqual({ context: "..", dockerfile: "Dockerfile" })
      expect([name, s.command?.slice(0, dockerCmd.length)]).toEqual([name, dockerCmd])
      expect([name, s.command?.slice(dockerCmd.length, -1)]).toEqual([name, ["--role"]])
      expect(SERVE_ROLES).toContain(roleOf(s) as (typeof SERVE_ROLES)[number])
    }
    expect(kintsugi.filter(([, s]) => roleOf(s) === "api").length).toBe(2)
    expect(kintsugi.filter(([, s]) => roleOf(s) === "worker").length).toBe(3)
    expect(compose.services["postgres"]?.image).toStartWith("postgres:")
    for (const [, s] of kintsugi) expect(s.depends_on?.["postgres"]).toEqual({ condition: "service_healthy" })
  })

  test("every variable set is one the code reads through Config; secrets come as files of mounted secrets", () => {
    const secretNames = new Set<string>(SECRET_VARIABLES)
    for (const [name, s] of kintsugi) {
      const env = s.environment ?? {}
      expect(Object.keys(env).length).toBeGreaterThan(0)
      for (const [key, value] of Object.entries(env)) {
        if (key.endsWith("_FILE")) {
          const base = key.slice(0, -"_FILE".length)
          expect(`${key}: ${secretNames.has(base)}`).toBe(`${key}: true`)
          const secret = /^\/run\/secrets\/(.+)$/.exec(value)?.[1] ?? ""
          expect(`${name} mounts ${secret}: ${s.secrets?.includes(secret)}`).toBe(`${name} mounts ${secret}: true`)
          expect(compose.secrets[secret]?.file).toStartWith("./secrets/")
          expect(readByConfig(base) ? base : `${base} is read by no Config`).toBe(base)
        } else {
          // A secret never as a plain variable: it would show in `docker inspect`.
          expect(secretNames.has(key) ? `${key} is a secret` : key).toBe(key)
          expect(readByConfig(key) ? key : `${key} is read by no Config`).toBe(key)
        }
      }
      expect(env["DATABASE_URL_FILE"]).toBeDefined()
      expect(env["KINTSUGI_SECRET_KEY_FILE"]).toBeDefined()
    }
  })

  test("the job roots are one volume that every process mounts at KINTSUGI_JOB_ROOTS", () => {
    for (const [name, s] of kintsugi) {
      const roots = s.environment?.["KINTSUGI_JOB_ROOTS"] ?? ""
      const mount = (s.volumes ?? []).find((v) => v.endsWith(`:${roots}`))
      expect(mount === undefined ? `${name}: nothing mounted at ${roots}` : mount).toBe("workspaces:/workspaces")
    }
    expect(Object.keys(compose.volumes)).toContain("workspaces")
  })

  test("docs/operations.md shows the file and names each role and variable it sets", () => {
    const doc = read("docs/operations.md")
    expect(doc).toContain("deploy/compose.yaml")
    for (const role of ["api", "worker"]) expect(doc).toContain(`--role ${role}`)
    const names = new Set(kintsugi.flatMap(([, s]) => Object.keys(s.environment ?? {})))
    for (const name of names) expect(doc.includes(`\`${name}\``) ? name : `${name} is not in docs/operations.md`).toBe(name)
  })
})
