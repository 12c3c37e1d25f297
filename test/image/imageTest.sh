#!/usr/bin/env bash
# The image, built and started by a test (docs/container.md):
#
#  1. a stand-in for the registry's base image (oven/bun:1.4.5-slim, Debian trixie) where the registry
#     cannot be reached: `debootstrap --variant=minbase` of that release from this machine's Debian
#     mirror (cached per release), trimmed as Debian's slim images are, `podman import`, Bun copied in
#     at /usr/local/bin/bun, a `bun` user (uid 1000); a derived layer that trusts this machine's CA
#     bundle (the npm registry is reached through it) so that only the stand-in ever carries it;
#  2. `podman build --isolation chroot --build-arg BASE=<stand-in>` of the real Dockerfile; its size
#     must stay at most 450 MB;
#  3. `podman image mount`, a writable layer over it (as a container gets), and the image's root
#     started with bubblewrap as the image's user with its ENV, WORKDIR, ENTRYPOINT and CMD, on a free
#     port, with a fresh /data, under a seccomp filter that blocks new namespaces and mounts as Docker's
#     default profile does (test/support/userNamespaceJail.ts --write-filter, for `bwrap --seccomp`);
#  4. /readyz 200, the image's HEALTHCHECK passing inside it, sign-in, a built-in agent's job running
#     one of its scripts through `shell` against a scripted model (test/image/imageJob.ts), and the
#     start-up log naming the sandbox in force (Landlock: user namespaces are blocked).
#
# Root, podman, debootstrap (for the first stand-in), bubblewrap and Bun 1.4.5 on the machine. Prints
# the image size and the durations; the last line is "image test: passed" or "image test: failed (…)".
# Settings: KINTSUGI_IMAGE_CACHE (default $XDG_CACHE_HOME/kintsugi-image, else /var/cache/kintsugi-image),
# KINTSUGI_IMAGE_REFRESH=1 rebuilds the stand-in, KINTSUGI_IMAGE_KEEP=1 keeps the built image.
set -euo pipefail
cd "$(dirname "$0")/../.."

BUN_VERSION=1.4.5
# The Debian release under oven/bun:1.4.5-slim (its Dockerfile: FROM debian:trixie-slim).
RELEASE=${KINTSUGI_IMAGE_RELEASE:-trixie}
CACHE=${KINTSUGI_IMAGE_CACHE:-${XDG_CACHE_HOME:+$XDG_CACHE_HOME/kintsugi-image}}
CACHE=${CACHE:-/var/cache/kintsugi-image}
STANDIN=localhost/kintsugi-standin:$RELEASE-bun$BUN_VERSION
STANDIN_CA=localhost/kintsugi-standin:$RELEASE-bun$BUN_VERSION-machine-ca
# Per run: two runs at once (or an image kept by KINTSUGI_IMAGE_KEEP=1) do not meet.
IMAGE=localhost/kintsugi-image-test:run-$$
MAX_BYTES=450000000
AGENT=codebase-inventory
# Two of its own scripts: one reading the tree, one running git on it.
SCRIPTS=(ext-counts.sh git-summary.sh)

failures=()
fail() { failures+=("$1"); echo "FAIL $1"; }
ok() { echo "ok   $1"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
step() { printf '\n--- %s\n' "$*"; }
finish() {
  echo
  if [ ${#failures[@]} -eq 0 ]; then echo "image test: passed"; exit 0; fi
  echo "image test: failed (${#failures[@]}: $(IFS=';'; echo "${failures[*]}"))"
  exit 1
}
die() { fail "$1"; finish; }

[ "$(id -u)" = 0 ] || die "needs root (podman image mount, an overlay mount, chroot)"
for tool in podman bwrap bun; do command -v "$tool" >/dev/null 2>&1 || die "needs $tool"; done

work=$(mktemp -d /tmp/kintsugi-image-test.XXXXXX)
server_pid=""
mounted=""
overlay=""
cleanup() {
  set +e
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  [ -n "$overlay" ] && umount "$overlay" 2>/dev/null
  [ -n "$mounted" ] && podman image unmount "$IMAGE" >/dev/null 2>&1
  if [ "${KINTSUGI_IMAGE_KEEP:-}" = 1 ]; then echo "kept $IMAGE"; else podman rmi -f "$IMAGE" >/dev/null 2>&1; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- 1. The stand-in base -------------------------------------------------------------------------

# The machine's Debian mirror (main archive and security), from /etc/apt/sources.list*.
apt_uris() {
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | sed -n -e 's/^[[:space:]]*URIs:[[:space:]]*//p' -e 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' \
    | tr ' ' '\n' | sed 's:/*$::' | awk 'NF && !seen[$0]++'
}
MIRROR=$(apt_uris | grep -E '/debian$' | head -1 || true)
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=$(apt_uris | grep -E '/debian-security$' | head -1 || true)
SECURITY_MIRROR=${SECURITY_MIRROR:-${MIRROR%/debian}/debian-security}

# Bun 1.4.5: this machine's (the npm package bun@1.4.5 installs a real binary), else from npm.
bun_binary() {
  local b
  b=$(readlink -f "$(command -v bun)")
  if [ "$("$b" --version 2>/dev/null)" = "$BUN_VERSION" ]; then echo "$b"; return; fi
  npm install --no-save --silent --prefix "$work/npm-bun" "bun@$BUN_VERSION" >/dev/null 2>&1 || return 1
  b=$(readlink -f "$work/npm-bun/node_modules/bun/bin/bun.exe")
  [ "$("$b" --version 2>/dev/null)" = "$BUN_VERSION" ] && echo "$b"
}

make_rootfs_tar() {
  local tar=$1 rootfs=$work/rootfs
  command -v debootstrap >/dev/null 2>&1 || die "needs debootstrap (apt-get install debootstrap) for the stand-in base"
  echo "debootstrap --variant=minbase $RELEASE from $MIRROR (cached in $tar)"
  debootstrap --variant=minbase --include=ca-certificates "$RELEASE" "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log"; die "debootstrap of $RELEASE from $MIRROR"; }
  # What Debian's slim images leave out (and keep out of later apt-get installs), their apt sources.
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/info/*
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
EOF
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  rm -rf "$rootfs"/usr/share/{info,man,groff,linda,lintian,locale}/*
  rm -rf "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
  rm -f "$rootfs/etc/apt/sources.list" "$rootfs/etc/resolv.conf" "$rootfs/etc/hostname"
  cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $RELEASE $RELEASE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: $RELEASE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  mkdir -p "$(dirname "$tar")"
  tar --numeric-owner --xattrs -C "$rootfs" -cf "$tar.part" . && mv "$tar.part" "$tar"
  rm -rf "$rootfs"
}

make_standin() {
  local tar=$CACHE/debian-$RELEASE-minbase-slim.tar rootfs=$work/standin bun
  if [ "${KINTSUGI_IMAGE_REFRESH:-}" = 1 ]; then rm -f "$tar"; fi
  [ -s "$tar" ] || make_rootfs_tar "$tar"
  bun=$(bun_binary) || die "no Bun $BUN_VERSION binary (this machine's, or npm install bun@$BUN_VERSION)"
  mkdir -p "$rootfs"
  tar --numeric-owner -C "$rootfs" -xf "$tar"
  # What oven/bun's slim image adds to debian:slim: bun, bunx, a `node` fallback, the bun user, the entrypoint.
  install -m 0755 "$bun" "$rootfs/usr/local/bin/bun"
  ln -sf bun "$rootfs/usr/local/bin/bunx"
  mkdir -p "$rootfs/usr/local/bun-node-fallback-bin"
  ln -sf /usr/local/bin/bun "$rootfs/usr/local/bun-node-fallback-bin/node"
  cat >"$rootfs/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e
# As oven/bun's: an option or a non-command as the first argument runs it with bun.
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- /usr/local/bin/bun "$@"
fi
exec "$@"
EOF
  chmod 0755 "$rootfs/usr/local/bin/docker-entrypoint.sh"
  chroot "$rootfs" groupadd --gid 1000 bun
  chroot "$rootfs" useradd --uid 1000 --gid bun --shell /bin/sh --create-home bun
  mkdir -p "$rootfs/home/bun/app" && chown 1000:1000 "$rootfs/home/bun/app"
  tar --numeric-owner --xattrs -C "$rootfs" -cf "$work/standin.tar" .
  rm -rf "$rootfs"
  podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/bun-node-fallback-bin' \
    --change 'ENV BUN_RUNTIME_TRANSPILER_CACHE_PATH=0' \
    --change 'ENV BUN_INSTALL_BIN=/usr/local/bin' \
    --change 'WORKDIR /home/bun/app' \
    --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
    --change 'CMD ["/usr/local/bin/bun"]' \
    --change "LABEL org.opencontainers.image.description=\"stand-in for oven/bun:$BUN_VERSION-slim (debootstrap $RELEASE)\"" \
    "$work/standin.tar" "$STANDIN" >/dev/null
  rm -f "$work/standin.tar"
}

step "stand-in base for oven/bun:$BUN_VERSION-slim (Debian $RELEASE)"
t0=$(now)
if [ "${KINTSUGI_IMAGE_REFRESH:-}" = 1 ] || ! podman image exists "$STANDIN"; then make_standin; fi
# Only the stand-in trusts this machine's CA bundle (the npm registry is reached through it): a derived
# layer the build starts from; the Dockerfile itself names no CA and no proxy.
ca=${NODE_EXTRA_CA_CERTS:-}
[ -n "$ca" ] && [ -r "$ca" ] || ca=/etc/ssl/certs/ca-certificates.crt
base=$STANDIN
if [ -r "$ca" ]; then
  mkdir -p "$work/ca" && cp "$ca" "$work/ca/machine-ca.pem"
  printf 'FROM %s\nCOPY machine-ca.pem /usr/local/share/kintsugi-standin/machine-ca.pem\nENV NODE_EXTRA_CA_CERTS=/usr/local/share/kintsugi-standin/machine-ca.pem\n' "$STANDIN" >"$work/ca/Containerfile"
  podman build --isolation chroot --quiet -t "$STANDIN_CA" -f "$work/ca/Containerfile" "$work/ca" >/dev/null || die "the stand-in's CA layer"
  base=$STANDIN_CA
fi
echo "stand-in: $base ($(secs "$t0" "$(now)") s)"

# --- 2. The build ----------------------------------------------------------------------------------

step "podman build --isolation chroot --build-arg BASE=$base"
t0=$(now)
if ! podman build --isolation chroot --format docker --pull=never --build-arg "BASE=$base" -t "$IMAGE" -f Dockerfile . >"$work/build.log" 2>&1; then
  tail -40 "$work/build.log"
  die "podman build of the Dockerfile"
fi
build_secs=$(secs "$t0" "$(now)")
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
base_size=$(podman image inspect --format '{{.Size}}' "$base")
size_mb=$(awk -v s="$size" 'BEGIN { printf "%.0f", s / 1e6 }')
echo "built in $build_secs s; image size $size_mb MB ($size bytes; the stand-in base $(awk -v s="$base_size" 'BEGIN { printf "%.0f", s / 1e6 }') MB)"
if [ "$size" -le "$MAX_BYTES" ]; then ok "image size $size_mb MB ≤ 450 MB"; else fail "image size $size_mb MB > 450 MB"; fi
podman image inspect "$IMAGE" >"$work/inspect.json"
hc=$(bun test/image/imageConfig.ts healthcheck <"$work/inspect.json" | tr '\0' ' ')
if [[ "$hc" == *"/readyz"* && "$hc" == *"PORT"* && "$hc" != *"7777/"* ]]; then ok "HEALTHCHECK probes /readyz on \$PORT"; else fail "HEALTHCHECK probes /readyz on \$PORT (it runs: $hc)"; fi

# --- 3. Start the image's root like `docker run` with default settings ----------------------------

step "start the image's root with bubblewrap (user namespaces blocked by seccomp)"
mnt=$(podman image mount "$IMAGE")
mounted=1
# The container's writable layer: an overlay over the image's read-only root.
mkdir -p "$work/layer/upper" "$work/layer/work" "$work/root"
if mount -t overlay overlay -o "lowerdir=$mnt,upperdir=$work/layer/upper,workdir=$work/layer/work" "$work/root" 2>"$work/overlay.err"; then
  overlay=$work/root
  rootfs=$work/root
else
  echo "no writable layer ($(cat "$work/overlay.err")): the image's root read-only"
  rootfs=$mnt
fi

user=$(bun test/image/imageConfig.ts user <"$work/inspect.json" | tr -d '\0')
passwd_line=$(awk -F: -v u="${user%%:*}" '$1 == u || $3 == u' "$rootfs/etc/passwd" | head -1)
[ -n "$passwd_line" ] || die "the image's user $user is not in its /etc/passwd"
uid=$(echo "$passwd_line" | cut -d: -f3)
gid=$(echo "$passwd_line" | cut -d: -f4)
home=$(echo "$passwd_line" | cut -d: -f6)
[ "$uid" != 0 ] && ok "the image runs as a non-root user ($user, uid $uid)" || fail "the image runs as root"

port=$(bun -e 'const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() }); console.log(s.port); s.stop(true)')
password="image-test-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# A fresh /data volume (as Docker makes one from the image's empty /data, owned by bun) with a
# workspace under the default job root (<data dir>/workspaces).
data=$work/data
ws=$data/workspaces/inventory
mkdir -p "$ws/src/lib" "$ws/out"
printf 'export const greet = (name: string) => `hello ${name}`\n' >"$ws/src/lib/greet.ts"
printf 'import { greet } from "./lib/greet.ts"\nconsole.log(greet("world"))\n' >"$ws/src/main.ts"
printf '{ "name": "tiny", "version": "1.0.0", "scripts": { "start": "bun src/main.ts" } }\n' >"$ws/src/package.json"
printf '# tiny\n\nA two-file service.\n' >"$ws/src/README.md"
# The sources are their own repository (git-summary.sh reads its history with git).
git -C "$ws/src" init -q && git -C "$ws/src" add -A && git -C "$ws/src" -c user.name=image-test -c user.email=image-test@localhost commit -q -m "a tiny service"
chown -R "$uid:$gid" "$data"
chmod 0755 "$data"

printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tkintsugi-image-test\n' >"$work/hosts"
echo kintsugi-image-test >"$work/hostname"
cp /etc/resolv.conf "$work/resolv.conf" 2>/dev/null || : >"$work/resolv.conf"
bun test/support/userNamespaceJail.ts --write-filter "$work/seccomp.bpf"

mapfile -d '' env_pairs < <(bun test/image/imageConfig.ts env "HOSTNAME=kintsugi-image-test" "HOME=$home" "PORT=$port" "KINTSUGI_ADMIN_PASSWORD=$password" <"$work/inspect.json")
mapfile -d '' argv < <(bun test/image/imageConfig.ts argv <"$work/inspect.json")
mapfile -d '' healthcheck < <(bun test/image/imageConfig.ts healthcheck <"$work/inspect.json")
workdir=$(bun test/image/imageConfig.ts workdir <"$work/inspect.json" | tr -d '\0')
setenv=()
for pair in "${env_pairs[@]}"; do setenv+=(--setenv "${pair%%=*}" "${pair#*=}"); done
# The same namespaces as a container (the network is the host's, so 127.0.0.1 reaches the scripted
# model and the test reaches the server), the command as PID 1 (no init, as `docker run` without
# --init); the image's user with no capabilities, as `USER bun` is.
in_container=(bwrap --die-with-parent --unshare-pid --as-pid-1 --unshare-ipc --unshare-uts --unshare-cgroup-try --hostname kintsugi-image-test \
    --bind "$rootfs" / --dev /dev --proc /proc --bind "$data" /data \
    --ro-bind "$work/hosts" /etc/hosts --ro-bind "$work/hostname" /etc/hostname --ro-bind "$work/resolv.conf" /etc/resolv.conf \
    --clearenv "${setenv[@]}" --chdir "$workdir" --seccomp 9 \
    -- /usr/bin/setpriv --reuid="$uid" --regid="$gid" --init-groups --inh-caps=-all --)

t0=$(now)
"${in_container[@]}" "${argv[@]}" 9<"$work/seccomp.bpf" >"$work/server.log" 2>&1 &
server_pid=$!
ready=""
for _ in $(seq 1 1200); do
  if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
  code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$port/readyz" 2>/dev/null || true)
  if [ "$code" = 200 ]; then ready=1; break; fi
  sleep 0.1
done
start_secs=$(secs "$t0" "$(now)")
if [ -z "$ready" ]; then
  echo "server log:"; sed 's/^/  | /' "$work/server.log" | tail -40
  die "/readyz 200 (none after $start_secs s)"
fi
ok "/readyz 200 after $start_secs s (port $port, argv: ${argv[*]})"
echo "/readyz: $(curl -s -m 5 "http://127.0.0.1:$port/readyz" | head -c 400)"

# Every process of the container (descendants of bwrap): none holds the admin password in its environment.
descendants() { local p; for p in $(ps -o pid= --ppid "$1"); do echo "$p"; descendants "$p"; done; }
leaks=""
for p in $(descendants "$server_pid"); do
  if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q -F "$password"; then leaks+=" $p($(tr '\0' ' ' <"/proc/$p/cmdline" | head -c 60))"; fi
done
[ -z "$leaks" ] && ok "no process of the container keeps KINTSUGI_ADMIN_PASSWORD in its environment" || fail "the admin password is in the environment of:$leaks"

# Docker runs the HEALTHCHECK in the container with its environment: the same here.
if [ ${#healthcheck[@]} -gt 0 ] && "${in_container[@]}" "${healthcheck[@]}" 9<"$work/seccomp.bpf" >"$work/health.log" 2>&1; then
  ok "the image's HEALTHCHECK passes inside it (PORT=$port)"
else
  fail "the image's HEALTHCHECK passes inside it (PORT=$port): $(head -c 300 "$work/health.log" 2>/dev/null)"
fi

# What the kernel's tools need at run time, as the image's user.
tools_check='for t in bash git ps bwrap prlimit perl; do command -v "$t" >/dev/null || { echo "missing: $t"; exit 1; }; done; git --version; bwrap --version; prlimit --version | head -1; perl -e "print qq(perl ok\n)"'
if "${in_container[@]}" /bin/sh -c "$tools_check" 9<"$work/seccomp.bpf" >"$work/tools.log" 2>&1; then
  ok "bash, git, ps, bwrap, prlimit and perl run in the image ($(head -1 "$work/tools.log"))"
else
  fail "the kernel's tools in the image: $(tr '\n' ' ' <"$work/tools.log" | head -c 300)"
fi

# The started root is a default container's: no user namespace can be made in it.
if "${in_container[@]}" unshare --user true 9<"$work/seccomp.bpf" >"$work/unshare.log" 2>&1; then
  fail "user namespaces are blocked in the started root (unshare --user succeeded)"
else
  ok "user namespaces are blocked in the started root ($(head -1 "$work/unshare.log" | head -c 120))"
fi

# --- 4. Sign-in and a built-in agent's job --------------------------------------------------------

step "sign-in, provider, $AGENT bound to a scripted model, a job running ${SCRIPTS[*]} through shell"
t0=$(now)
if NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" bun test/image/imageJob.ts --origin "http://127.0.0.1:$port" --password "$password" \
  --agent "$AGENT" "${SCRIPTS[@]/#/--script=}" --workspace /data/workspaces/inventory --host-workspace "$ws"; then
  ok "$AGENT's job ran ${SCRIPTS[*]} through shell and completed ($(secs "$t0" "$(now)") s)"
else
  fail "$AGENT's job ran ${SCRIPTS[*]} through shell and completed"
fi

step "start-up log"
grep -i -E 'serving on|allowed host|sandbox' "$work/server.log" | cut -c1-400 | sed 's/^/  | /' || true
sandbox_line=$(grep -i -o -E 'process sandbox: [^"]*' "$work/server.log" | head -1 || true)
case "$sandbox_line" in
  "process sandbox: landlock"*) ok "the log names the sandbox in force: landlock (user namespaces are blocked)" ;;
  "") fail "the log names the sandbox in force (no 'process sandbox:' line)" ;;
  *) fail "the log names Landlock as the sandbox in force where user namespaces are blocked: ${sandbox_line:0:300}" ;;
esac
grep -q -E 'serving on http://' "$work/server.log" && ok "the log names the URL it serves on" || fail "the log names the URL it serves on"
grep -q -i -E 'allowed.?hosts' "$work/server.log" && ok "the log names the allowed hosts (KINTSUGI_ALLOWED_HOSTS)" || fail "the log names the allowed hosts (KINTSUGI_ALLOWED_HOSTS)"
if grep -q -E '"level":"(error|fatal)"|\] (ERROR|FATAL)' "$work/server.log"; then
  echo "errors in the server log:"; grep -E '"level":"(error|fatal)"|\] (ERROR|FATAL)' "$work/server.log" | cut -c1-400 | sed 's/^/  | /'
fi

step "stop (SIGTERM to the container's PID 1, as docker stop)"
t0=$(now)
pid1=$(ps -o pid= --ppid "$server_pid" | head -1 | tr -d ' ')
kill -TERM "${pid1:-$server_pid}"
stopped=""
for _ in $(seq 1 450); do kill -0 "$server_pid" 2>/dev/null || { stopped=1; break; }; sleep 0.1; done
if [ -n "$stopped" ]; then wait "$server_pid" 2>/dev/null && rc=0 || rc=$?; server_pid=""; ok "stopped on SIGTERM in $(secs "$t0" "$(now)") s (exit $rc)"; else fail "stopped on SIGTERM within 45 s"; fi

echo
echo "summary: image $size_mb MB, build $build_secs s, start to /readyz $start_secs s, load: $(cut -d' ' -f1-3 /proc/loadavg)"
finish
