#!/usr/bin/env bash
# Install slipway's build and test dependencies from Debian 12's packages (needs root or sudo).
# Safe to run again: apt-get skips what is already installed.
set -euo pipefail
PKGS=(
  build-essential clang-format cmake ninja-build pkg-config git ccache clang llvm libclang-rt-14-dev
  libcurl4-openssl-dev libevent-dev libjansson-dev libfyaml-dev libsqlite3-dev libssl-dev
  libcmocka-dev sqlite3 openssl ca-certificates curl
  nodejs npm
  nginx-light openssh-server openssh-client iproute2 procps psmisc
  systemd-container mmdebstrap podman runc
  chromium prometheus
  patch diffutils
  scdoc man-db zsh
  kubernetes-client
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node/npm may come from elsewhere (e.g. NodeSource); accept any working npm.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
# kubectl may come from elsewhere too (a kubectl package owning /usr/bin/kubectl conflicts with
# Debian's kubernetes-client); accept any working kubectl (tests/real/test_k8s_kubectl.c).
if command -v kubectl >/dev/null 2>&1; then
  missing=("${missing[@]/kubernetes-client}")
fi
read -ra missing <<<"${missing[*]}"
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all present"
  exit 0
fi
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "deps: missing ${missing[*]}: run as root or install sudo" >&2; exit 1; }
  SUDO="sudo DEBIAN_FRONTEND=noninteractive"
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
