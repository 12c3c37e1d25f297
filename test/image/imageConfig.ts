/**
 * What `docker run` takes from an image's config, read from `podman image inspect` JSON on stdin and
 * printed NUL-separated for test/image/imageTest.sh (which starts the image's root with bubblewrap):
 *
 *   env          KEY=VALUE entries of the image's ENV, then the given KEY=VALUE overrides
 *   argv         ENTRYPOINT + CMD
 *   workdir      WORKDIR (or /)
 *   user         USER (name or uid[:gid]; "root" when unset)
 *   healthcheck  the HEALTHCHECK test as argv (CMD-SHELL becomes /bin/sh -c …), nothing when there is none
 */
export {}

type Healthcheck = { readonly Test?: ReadonlyArray<string> | null } | null

type Config = {
  readonly Env?: ReadonlyArray<string> | null
  readonly Entrypoint?: ReadonlyArray<string> | null
  readonly Cmd?: ReadonlyArray<string> | null
  readonly WorkingDir?: string
  readonly User?: string
  readonly Healthcheck?: Healthcheck
}

const [what, ...overrides] = process.argv.slice(2)
type Inspected = { readonly Config?: Config; readonly Healthcheck?: Healthcheck }
const parsed = JSON.parse(await Bun.stdin.text()) as ReadonlyArray<Inspected> | Inspected
const inspected: Inspected = (Array.isArray(parsed) ? parsed[0] : parsed) ?? {}
const config: Config = inspected.Config ?? {}

const out = (items: ReadonlyArray<string>) => process.stdout.write(items.map((s) => `${s}\0`).join(""))

switch (what) {
  case "env": {
    const env = new Map<string, string>()
    for (const entry of [...(config.Env ?? []), ...overrides]) {
      const eq = entry.indexOf("=")
      if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1))
    }
    out([...env].map(([k, v]) => `${k}=${v}`))
    break
  }
  case "argv":
    out([...(config.Entrypoint ?? []), ...(config.Cmd ?? [])])
    break
  case "workdir":
    out([config.WorkingDir !== undefined && config.WorkingDir !== "" ? config.WorkingDir : "/"])
    break
  case "user":
    out([config.User !== undefined && config.User !== "" ? config.User : "root"])
    break
  case "healthcheck": {
    // podman keeps a Docker-format image's HEALTHCHECK beside the config, Docker inside it.
    const [kind, ...rest] = (inspected.Healthcheck ?? config.Healthcheck)?.Test ?? []
    if (kind === "CMD") out(rest)
    else if (kind === "CMD-SHELL") out(["/bin/sh", "-c", rest.join(" ")])
    break
  }
  default:
    console.error("usage: podman image inspect IMAGE | bun test/image/imageConfig.ts env|argv|workdir|user|healthcheck [KEY=VALUE…]")
    process.exit(2)
}
