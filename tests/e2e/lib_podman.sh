# Sourced (before lib_e2e.sh) by the e2e tests that run replicas in podman containers, with TEST_NAME set: skips
# the test (77, saying why) where podman cannot run as allot drives it (rootful, runc, cgroupfs) or the test's
# images cannot be built (they are built from busybox-static: no registry is reachable), and sets PODMAN.
if [ "$(id -u)" != 0 ]; then
  echo "$TEST_NAME: SKIP: allot drives podman rootful, which needs root; this test runs as uid $(id -u)"
  exit 77
fi
command -v podman >/dev/null || { echo "$TEST_NAME: SKIP: podman is not installed (apt-get install podman runc uidmap)"; exit 77; }
[ -x /bin/busybox ] || { echo "$TEST_NAME: SKIP: busybox-static is not installed (the test's image is built from it)"; exit 77; }
# The test's work directory (lib_e2e.sh) outside /tmp, which a replica's private /tmp would hide from it.
export TMPDIR=/var/tmp
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs)
