#!/usr/bin/env bash
# Installs the Debian packages allot builds with, only when one is missing, so a fresh Debian machine needs
# nothing else. Safe to run again: it checks before it installs.
set -euo pipefail
# libpq-dev: the PostgreSQL store (the tests install the server, postgresql, themselves).
# libssl-dev: HTTPS (cpp-httplib is built with OpenSSL); openssl: the TLS tests make their certificates with it.
# podman, runc, uidmap: container replicas (agent/container.h); busybox-static: the image their tests build.
packages=(g++ cmake ninja-build pkg-config nlohmann-json3-dev libyaml-cpp-dev libcpp-httplib-dev libcli11-dev
          libfmt-dev libspdlog-dev libsqlite3-dev libpq-dev libssl-dev openssl libgtest-dev libgmock-dev libbenchmark-dev
          podman runc uidmap busybox-static)
# Extra packages a caller needs (for example the Slurm integration test) come in as arguments.
packages+=("$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "installing: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
