#!/usr/bin/env bash
# slipway's test hosts: real machines with systemd and sshd, booted with systemd-nspawn on this
# machine, each with a network of its own (../shared/TESTHOSTS.md says what works here and why).
#
# Usage: scripts/testhost.sh rootfs
#        scripts/testhost.sh base
#        scripts/testhost.sh image
#        scripts/testhost.sh up NAME ADDR [--bind-ro PATH[:DEST]]... [--authorize PUBKEY]
#        scripts/testhost.sh down NAME [--kill]
#        scripts/testhost.sh list
#        scripts/testhost.sh paths
#
#   rootfs  Build (once) the Debian bookworm minbase root filesystem as a tar: systemd, sshd,
#           curl, libgomp1 (llama-server's OpenMP). Cached as
#           $CACHE/testhost/rootfs-KEY.tar, KEY a hash of the package list and suite, so a
#           changed list builds a new one. Prints the tar's path.
#   base    Unpack (once) the rootfs into $CACHE/testhost/base-KEY, the read-only lower layer
#           every host's overlay shares. Prints its path.
#   image   Build (once) the container image localhost/slipway-llama:test for the podman runtime:
#           the rootfs imported (`podman import`) plus the pinned llama-server and its shared
#           libraries under /opt/llama (a Containerfile written here, `podman build`). Rebuilt
#           only when the rootfs or the llama.cpp build changes (the key is a label on the
#           image). Prints `image=localhost/slipway-llama:test` and `digest=sha256:...`.
#   up      Boot a host from the rootfs, unpacked once into $CACHE/testhost/base-KEY and shared
#           read-only: $RUN/NAME/root is an overlay of it with the host's own writable layer
#           ($RUN/NAME/upper; podman's store is a plain directory bound at /var/lib/containers,
#           since its overlay driver cannot sit on an overlay). The host gets a fresh ssh host
#           key, an sshd with keys only, a generated client key (and --authorize PUBKEY files)
#           in root's authorized_keys, the pinned llama.cpp build read-only at /opt/llama (and at
#           its own path, which its RUNPATH names), and a NETWORK OF ITS OWN: systemd-nspawn
#           --network-veth-extra makes a veth pair, `swthN` here with 169.254.N.1/30 and `host0`
#           inside with ADDR = 169.254.N.2/30 (link-local: nothing routes it off this machine).
#           127.0.0.1 inside the host is the host's own, as on a real remote machine: an engine
#           bound there is not reachable from here but through the host. Boots with
#           `systemd-nspawn --register=no --keep-unit --boot`, waits (bounded) until `systemctl
#           is-system-running` says running or degraded and sshd answers at ADDR with the
#           generated key, then prints key=value lines:
#             name= addr= gateway= port= pid= leader= root= key= known_hosts= known_hosts_line=
#             boot_ms=
#           A host already up under NAME is stopped first (up is idempotent).
#   down    SIGTERM to the nspawn (the host powers off), wait up to 20 s, SIGKILL, unmount its
#           overlay, remove its veth and $RUN/NAME. Quiet and exit 0 when there is nothing to
#           stop. --kill: no power-off, SIGKILL to the host's PID 1 at once (a disposable host:
#           the tests' swth_down), then the same clean-up.
#   list    One line per host: NAME ADDR PID state (running, or dead).
#   paths   rootfs=TAR rootfs_built=0|1 llama=DIR (empty when not built) run=DIR, building nothing
#           (the tests' prerequisite check).
#
# Env: SLIPWAY_CACHE (default ~/.cache/slipway), SLIPWAY_TESTHOST_RUN (hosts' directories,
#      default /var/tmp/slipway-testhost), SLIPWAY_TESTHOST_BOOT_S (boot deadline, default 90).
# Exit: 0 done, 1 a step failed (named on stderr), 2 usage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

CACHE=${SLIPWAY_CACHE:-$HOME/.cache/slipway}
TH=$CACHE/testhost
RUN=${SLIPWAY_TESTHOST_RUN:-/var/tmp/slipway-testhost}
BOOT_S=${SLIPWAY_TESTHOST_BOOT_S:-90}
SUITE=bookworm
PACKAGES=systemd,systemd-sysv,dbus,openssh-server,curl,ca-certificates,libgomp1,podman,runc
IMAGE=localhost/slipway-llama:test

die() { printf 'testhost: %s\n' "$*" >&2; exit 1; }
note() { printf 'testhost: %s\n' "$*" >&2; }
usage() { sed -n '5,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

rootfs_key() { printf '%s %s minbase\n' "$SUITE" "$PACKAGES" | sha256sum | cut -c1-16; }
rootfs_tar() { printf '%s/rootfs-%s.tar' "$TH" "$(rootfs_key)"; }

cmd_rootfs() {
    local tar tmp start
    tar=$(rootfs_tar)
    if [ -s "$tar" ]; then
        echo "$tar"
        return 0
    fi
    command -v mmdebstrap >/dev/null || die "mmdebstrap not installed (scripts/deps.sh)"
    mkdir -p "$TH"
    # Two callers at once (ctest -j) build it once: the second waits and finds the tar.
    exec 8>"$TH/.rootfs.lock"
    flock 8
    if [ -s "$tar" ]; then
        echo "$tar"
        return 0
    fi
    tmp=$(mktemp "$TH/.rootfs.XXXXXX")
    start=$(date +%s%N)
    note "building $tar (mmdebstrap $SUITE minbase + $PACKAGES)"
    if ! mmdebstrap --quiet --variant=minbase --include="$PACKAGES" "$SUITE" "$tmp.tar" \
        >"$tmp.log" 2>&1; then
        tail -20 "$tmp.log" >&2
        rm -f "$tmp" "$tmp.tar" "$tmp.log"
        die "mmdebstrap failed (log above)"
    fi
    mv "$tmp.tar" "$tar"
    rm -f "$tmp" "$tmp.log"
    note "rootfs built in $((($(date +%s%N) - start) / 1000000)) ms"
    echo "$tar"
}

# The rootfs unpacked once, shared read-only by every host (each boots on an overlay of it).
base_dir() { printf '%s/base-%s' "$TH" "$(rootfs_key)"; }

cmd_base() {
    local tar base tmp
    tar=$(cmd_rootfs)
    base=$(base_dir)
    if [ -f "$base/.complete" ]; then
        echo "$base"
        return 0
    fi
    exec 6>"$TH/.base.lock"
    flock 6
    if [ ! -f "$base/.complete" ]; then
        rm -rf --one-file-system "$base"
        tmp=$(mktemp -d "$TH/.base.XXXXXX")
        tar -xpf "$tar" -C "$tmp" --numeric-owner || { rm -rf --one-file-system "$tmp"; die "unpacking $tar failed"; }
        # what every host writes over with its own
        rm -f "$tmp"/etc/ssh/ssh_host_*
        mkdir -p "$tmp/opt/llama" "$tmp/var/lib/slipway-images" "$tmp/var/lib/containers"
        touch "$tmp/.complete"
        mv "$tmp" "$base"
    fi
    exec 6>&-
    echo "$base"
}

llama_dir() {
    local d
    d=$("$here/llama-build.sh" --print-dir) || die "llama.cpp is not built ($d): scripts/llama-build.sh"
    echo "$d"
}

cmd_image() {
    local tar llama key have ctx base start
    tar=$(cmd_rootfs)
    llama=$(llama_dir)
    command -v podman >/dev/null || die "podman not installed (scripts/deps.sh)"
    # The key: the rootfs tar's name (itself keyed by its package list) and the llama-server
    # binary and libraries' contents.
    key=$( (basename "$tar"; cd "$llama/build/bin" && sha256sum ../../bin/llama-server ./*.so*) \
        | sha256sum | cut -c1-16)
    mkdir -p "$TH"
    exec 7>"$TH/.image.lock"
    flock 7
    have=$(podman image inspect --format '{{index .Labels "slipway.key"}}' "$IMAGE" 2>/dev/null || true)
    if [ "$have" != "$key" ]; then
        start=$(date +%s%N)
        base=localhost/slipway-testhost-rootfs:$(rootfs_key)
        if ! podman image exists "$base"; then
            note "podman import $tar as $base"
            podman import --quiet "$tar" "$base" >/dev/null || die "podman import $tar failed"
        fi
        ctx=$(mktemp -d "${TMPDIR:-/tmp}/slipway-image.XXXXXX")
        mkdir -p "$ctx/lib"
        cp "$llama/bin/llama-server" "$ctx/llama-server"
        # The build's own libraries (libllama, libggml*, ...): the binary's RUNPATH names the
        # build tree, so the image puts them on LD_LIBRARY_PATH instead.
        cp -L "$llama"/build/bin/*.so* "$ctx/lib/"
        cat >"$ctx/Containerfile" <<EOF
FROM $base
COPY llama-server /opt/llama/bin/llama-server
COPY lib/ /opt/llama/lib/
ENV LD_LIBRARY_PATH=/opt/llama/lib
LABEL slipway.key=$key
ENTRYPOINT ["/opt/llama/bin/llama-server"]
EOF
        note "podman build $IMAGE (key $key)"
        if ! podman build --quiet --runtime runc --cgroup-manager=cgroupfs -t "$IMAGE" \
            -f "$ctx/Containerfile" "$ctx" >"$ctx/build.log" 2>&1; then
            tail -20 "$ctx/build.log" >&2
            rm -rf "$ctx"
            die "podman build $IMAGE failed (log above)"
        fi
        rm -rf "$ctx"
        note "image built in $((($(date +%s%N) - start) / 1000000)) ms"
    fi
    echo "image=$IMAGE"
    echo "digest=$(podman image inspect --format '{{.Digest}}' "$IMAGE")"
    echo "id=$(podman image inspect --format '{{.Id}}' "$IMAGE")"
}

# The nspawn pid recorded for NAME, when that process is still a systemd-nspawn.
host_pid() {
    local d=$RUN/$1 pid
    [ -f "$d/nspawn.pid" ] || return 1
    pid=$(cat "$d/nspawn.pid")
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "systemd-nspawn" ] || return 1
    echo "$pid"
}

# The host's PID 1 as this machine sees it: the nspawn's descendant whose comm is systemd.
host_leader() {
    local pid=$1 c
    for c in $(pgrep -P "$pid" || true); do
        if [ "$(cat "/proc/$c/comm" 2>/dev/null)" = "systemd" ]; then
            echo "$c"
            return 0
        fi
        host_leader "$c" && return 0
    done
    return 1
}

# A process's start time (clock ticks since boot, /proc/PID/stat field 22): with the pid, its
# identity. Empty when it is gone.
proc_start() {
    local st
    st=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    st=${st##*) }
    echo "$st" | awk '{print $20}'
}

cmd_down() {
    local kill_now=
    if [ "${2:-}" = --kill ]; then kill_now=1; set -- "$1"; fi
    [ $# -eq 1 ] || usage
    local name=$1 d pid leader since i
    d=$RUN/$name
    [ -d "$d" ] || return 0
    if pid=$(host_pid "$name"); then
        leader=$(host_leader "$pid" || true)
        # --kill: the host is disposable (a test's): SIGKILL to its PID 1 ends its whole PID
        # namespace at once and nspawn follows within a tenth of a second, where a power-off
        # (systemd stopping every unit, then nspawn) takes about 2 s.
        if [ -n "$kill_now" ] && [ -n "$leader" ]; then
            kill -KILL "$leader" 2>/dev/null || true
        else
            kill -TERM "$pid" 2>/dev/null || true
        fi
        for ((i = 0; i < 200; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            # A unit that outlives the host's stop timeouts (a container ignoring SIGTERM) holds
            # the power-off. SIGKILL to nspawn alone leaves the host's PID 1 running (reparented
            # to this machine's PID 1): kill the leader too, which ends its whole PID namespace.
            note "$name: nspawn $pid did not power off in 20 s: SIGKILL to it and the host's PID 1 ${leader:-?}"
            [ -z "$leader" ] || kill -KILL "$leader" 2>/dev/null || true
            kill -KILL "$pid" 2>/dev/null || true
            for ((i = 0; i < 100; i++)); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
        fi
    fi
    # A leader left by an nspawn killed earlier: the pid recorded at boot, still that process
    # (its start time matches), still systemd.
    if [ -f "$d/leader" ]; then
        read -r leader since <"$d/leader" || true
        if [ -n "${leader:-}" ] && [ "$(cat "/proc/$leader/comm" 2>/dev/null)" = systemd ] &&
            [ "$(proc_start "$leader")" = "${since:-}" ]; then
            note "$name: its PID 1 $leader outlived nspawn: SIGKILL"
            kill -KILL "$leader" 2>/dev/null || true
            for ((i = 0; i < 100; i++)); do
                [ "$(proc_start "$leader")" = "$since" ] || break
                [ "$(awk '{print $3}' "/proc/$leader/stat" 2>/dev/null)" != Z ] || break
                sleep 0.1
            done
        fi
    fi
    # The host's root is an overlay mounted here: unmount it (lazily when something still
    # holds it). Bind mounts live in the host's own mount namespace, gone with it.
    if grep -q " $d/root " /proc/self/mounts; then
        umount "$d/root" 2>/dev/null || umount -l "$d/root" 2>/dev/null || true
    fi
    # The veth goes with the host's network namespace; one left by a killed nspawn is removed.
    if [ -f "$d/ifname" ]; then
        ip link del "$(cat "$d/ifname")" 2>/dev/null || true
    fi
    # Refuse to recurse into a directory that still has something mounted below it (it would
    # delete the bound trees).
    if grep -q " $d/" /proc/self/mounts; then
        die "$name: something is still mounted under $d: not removing it"
    fi
    rm -rf --one-file-system "$d"
}

cmd_list() {
    local d name pid
    [ -d "$RUN" ] || return 0
    for d in "$RUN"/*/; do
        [ -d "$d" ] || continue
        name=$(basename "$d")
        if pid=$(host_pid "$name"); then
            echo "$name $(cat "$d/addr" 2>/dev/null || echo '?') $pid running"
        else
            echo "$name $(cat "$d/addr" 2>/dev/null || echo '?') - dead"
        fi
    done
}

cmd_up() {
    [ $# -ge 2 ] || usage
    local name=$1 addr=$2
    shift 2
    local binds=() auth=() a
    while [ $# -gt 0 ]; do
        case $1 in
        --bind-ro) [ $# -ge 2 ] || usage; binds+=("--bind-ro=$2"); shift 2 ;;
        --bind-ro=*) binds+=("$1"); shift ;;
        --authorize) [ $# -ge 2 ] || usage; auth+=("$2"); shift 2 ;;
        *) usage ;;
        esac
    done
    [[ $name =~ ^[a-z][a-z0-9-]{0,30}$ ]] || die "bad host name '$name' (a-z, 0-9, -)"
    # ADDR: 169.254.N.2, the host's side of a /30 of its own; this machine's side is .1.
    [[ $addr =~ ^169\.254\.([0-9]{1,3})\.2$ ]] ||
        die "bad address '$addr' (169.254.N.2, N 1..254: the host's side of a link-local /30)"
    local net=${BASH_REMATCH[1]}
    [ "$net" -ge 1 ] && [ "$net" -le 254 ] || die "bad address '$addr' (N must be 1..254)"
    local gw=169.254.$net.1 ifname=swth$net
    command -v systemd-nspawn >/dev/null || die "systemd-nspawn not installed (scripts/deps.sh)"
    command -v ip >/dev/null || die "ip (iproute2) not installed (scripts/deps.sh)"
    for a in "${auth[@]}"; do [ -r "$a" ] || die "cannot read $a"; done

    local base llama d root start pid leader i state key kh
    base=$(cmd_base)
    llama=$(llama_dir)
    cmd_down "$name"
    # Another host's link under this name (a host killed without down, or one of another name
    # on the same N) would make the veth fail.
    if ip link show "$ifname" >/dev/null 2>&1; then
        local other
        other=$(grep -lx "$ifname" "$RUN"/*/ifname 2>/dev/null | head -1 || true)
        [ -z "$other" ] || die "$addr is taken: host $(basename "$(dirname "$other")") has $ifname (scripts/testhost.sh list)"
        ip link del "$ifname" 2>/dev/null || die "$ifname exists and cannot be removed"
    fi
    start=$(date +%s%N)
    d=$RUN/$name
    root=$d/root
    mkdir -p "$root" "$d/upper" "$d/work" "$d/containers"
    mount -t overlay overlay -o "lowerdir=$base,upperdir=$d/upper,workdir=$d/work" "$root" ||
        die "mounting the overlay of $base at $root failed"
    echo "$addr" >"$d/addr"
    echo "$ifname" >"$d/ifname"

    # A host key of its own (the base has none), an sshd on every address of its own network.
    ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$root/etc/ssh/ssh_host_ed25519_key"
    mkdir -p "$root/etc/ssh/sshd_config.d"
    cat >"$root/etc/ssh/sshd_config.d/slipway-testhost.conf" <<EOF
# written by slipway's scripts/testhost.sh
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
EOF
    key=$d/id_ed25519
    ssh-keygen -q -t ed25519 -N '' -C "slipway-testhost-$name" -f "$key"
    install -d -m 700 "$root/root/.ssh"
    cat "$key.pub" "${auth[@]}" >"$root/root/.ssh/authorized_keys"
    chmod 600 "$root/root/.ssh/authorized_keys"
    kh=$d/known_hosts
    printf '%s %s\n' "$addr" "$(cut -d' ' -f1,2 "$root/etc/ssh/ssh_host_ed25519_key.pub")" >"$kh"
    echo "$name" >"$root/etc/hostname"

    # podman inside the host. What works here (tried): the host on the unified cgroup hierarchy
    # (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 below: nspawn mounts the v1 controllers read-only, and
    # runc cannot make its cgroups there), runc with the systemd cgroup manager, no pids limit
    # (the unified hierarchy has no pids controller on this machine, runc fails writing
    # pids.max), the host's own network namespace (CNI's bridge cannot enable forwarding:
    # /proc/sys is read-only), a store on a plain directory (bound at /var/lib/containers: the
    # overlay driver cannot sit on the host's overlay root). This machine's image store
    # is bound read-only as an additional store, so the image `image` built is there at once,
    # under the same digest, with nothing copied.
    mkdir -p "$root/etc/containers"
    cat >"$root/etc/containers/containers.conf" <<EOF
# written by slipway's scripts/testhost.sh
[containers]
netns = "host"
pids_limit = 0
keyring = false
[engine]
runtime = "runc"
cgroup_manager = "systemd"
events_logger = "file"
EOF
    # podman's boot-time jobs (restarting containers marked restart=always, its auto-update
    # timer) are half of a host's boot (systemd-analyze) and nothing here uses them: masked.
    mkdir -p "$root/etc/systemd/system"
    for u in podman-restart.service podman-auto-update.service podman-auto-update.timer; do
        ln -sf /dev/null "$root/etc/systemd/system/$u"
    done
    # The hosts' engines share this machine's cores with the tests' own (tests get the same
    # through CMakeLists.txt's SW_TEST_ENV): llama.cpp's OpenMP workers spin while they wait
    # (the active wait policy), which on an overcommitted 2-core machine costs far more than
    # the work (two llama-server tests side by side: 74 s spinning, 27 s passive).
    mkdir -p "$root/etc/systemd/system.conf.d"
    printf '[Manager]\nDefaultEnvironment=OMP_WAIT_POLICY=PASSIVE\n' \
        >"$root/etc/systemd/system.conf.d/slipway-test.conf"
    local store=
    store=$(podman info --format '{{.Store.GraphRoot}}' 2>/dev/null || true)
    if [ -n "$store" ] && [ -d "$store" ]; then
        binds+=("--bind-ro=$store:/var/lib/slipway-images")
        cat >"$root/etc/containers/storage.conf" <<EOF
# written by slipway's scripts/testhost.sh
[storage]
driver = "overlay"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
[storage.options]
additionalimagestores = ["/var/lib/slipway-images"]
EOF
    fi

    # setsid: the host outlives this script; its console goes to a log.
    SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 setsid systemd-nspawn -q -D "$root" --register=no --keep-unit --boot --console=passive \
        --system-call-filter="@keyring bpf" --network-veth-extra="$ifname:host0" \
        -M "$name" --bind-ro="$llama:/opt/llama" --bind-ro="$llama" \
        --bind="$d/containers:/var/lib/containers" "${binds[@]}" \
        </dev/null >"$d/nspawn.log" 2>&1 &
    pid=$!
    echo "$pid" >"$d/nspawn.pid"

    state=
    leader=
    local netup=
    for ((i = 0; i < BOOT_S * 5; i++)); do
        kill -0 "$pid" 2>/dev/null || { tail -20 "$d/nspawn.log" >&2; die "$name: systemd-nspawn exited while booting (log above, $d/nspawn.log)"; }
        if [ -z "$leader" ]; then
            leader=$(host_leader "$pid" || true)
            [ -z "$leader" ] || echo "$leader $(proc_start "$leader")" >"$d/leader"
        fi
        # the link: this side's address, then the host's (the machine's own `ip` inside the
        # host's network namespace)
        if [ -n "$leader" ] && [ -z "$netup" ] && ip link show "$ifname" >/dev/null 2>&1; then
            if ip addr replace "$gw/30" dev "$ifname" && ip link set "$ifname" up &&
                nsenter -t "$leader" -n ip link set lo up &&
                nsenter -t "$leader" -n ip addr replace "$addr/30" dev host0 &&
                nsenter -t "$leader" -n ip link set host0 up; then
                netup=1
            fi
        fi
        if [ -n "$leader" ] && [ -n "$netup" ]; then
            state=$(timeout 5 nsenter -t "$leader" -m -u -i -n -p systemctl is-system-running 2>/dev/null || true)
            if [ "$state" = running ] || [ "$state" = degraded ]; then
                if timeout 5 ssh -n -i "$key" -o BatchMode=yes -o StrictHostKeyChecking=yes \
                    -o UserKnownHostsFile="$kh" -o ConnectTimeout=2 "root@$addr" true 2>/dev/null; then
                    break
                fi
            fi
        fi
        sleep 0.2
    done
    if [ "$i" -ge $((BOOT_S * 5)) ]; then
        tail -20 "$d/nspawn.log" >&2
        cmd_down "$name" || true
        die "$name: not up within ${BOOT_S} s (system state '${state:-unknown}')"
    fi
    echo "name=$name"
    echo "addr=$addr"
    echo "gateway=$gw"
    echo "ifname=$ifname"
    echo "port=22"
    echo "pid=$pid"
    echo "leader=$leader"
    echo "state=$state"
    echo "root=$root"
    echo "key=$key"
    echo "known_hosts=$kh"
    echo "known_hosts_line=$(cat "$kh")"
    echo "llama=/opt/llama"
    echo "boot_ms=$((($(date +%s%N) - start) / 1000000))"
}

[ $# -ge 1 ] || usage
sub=$1
shift
case $sub in
rootfs) [ $# -eq 0 ] || usage; cmd_rootfs ;;
base) [ $# -eq 0 ] || usage; cmd_base ;;
image) [ $# -eq 0 ] || usage; cmd_image ;;
up) cmd_up "$@" ;;
down) cmd_down "$@" ;;
list) [ $# -eq 0 ] || usage; cmd_list ;;
paths)
    # For the tests' prerequisite checks: where things are, without building anything.
    echo "rootfs=$(rootfs_tar)"
    [ -s "$(rootfs_tar)" ] && echo "rootfs_built=1" || echo "rootfs_built=0"
    if d=$("$here/llama-build.sh" --print-dir 2>/dev/null); then echo "llama=$d"; else echo "llama="; fi
    echo "run=$RUN"
    ;;
-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" ;;
*) usage ;;
esac
