# Boot a Debian 12 root file system with systemd as PID 1 under
# systemd-nspawn and run commands inside it (source this file).
#   ct_boot ROOTFS SHARE   boot; SHARE is bind-mounted read-only at /opt/rt-test
#   ct CMD…                run CMD in the container (clean environment)
#   ct_stop                power off and clean up
# Recipe: test-environment.md §4c. --register=no --keep-unit because the
# host has no systemd-machined/bus; the tree stays pristine (--volatile=overlay).

CT_NSPAWN=
CT_PID1=
CT_LOG=
CT_CGROUPS=()

ct() {
  nsenter -t "$CT_PID1" -m -u -i -n -p -C \
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
}

# Wait up to $1 seconds for "CMD…" to succeed.
ct_wait() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.2
  done
}

ct_boot() {
  local root=$1 share=$2
  CT_LOG="$share/nspawn.log"
  # Cgroups nspawn may leave behind in the host's hierarchies (hybrid mode).
  local before
  before=$(find /sys/fs/cgroup/systemd /sys/fs/cgroup/unified -maxdepth 3 -type d 2>/dev/null | sort)
  systemd-nspawn -q -D "$root" -b --register=no --keep-unit --console=passive --volatile=overlay \
    --private-network --bind-ro="$share":/opt/rt-test >"$CT_LOG" 2>&1 &
  CT_NSPAWN=$!
  local deadline=$((SECONDS + 60))
  until CT_PID1=$(pgrep -P "$CT_NSPAWN" -x systemd); do
    if [ $SECONDS -ge $deadline ] || ! kill -0 "$CT_NSPAWN" 2>/dev/null; then
      echo "container did not start:"; cat "$CT_LOG"; return 1
    fi
    sleep 0.1
  done
  # "running" or "degraded" (a unit the minimal tree cannot start) both mean booted.
  if ! ct_wait 120 ct sh -c 'case $(systemctl is-system-running) in running|degraded) exit 0;; *) exit 1;; esac'; then
    echo "container did not finish booting: $(ct systemctl is-system-running 2>&1)"
    return 1
  fi
  mapfile -t CT_CGROUPS < <(comm -13 <(echo "$before") \
    <(find /sys/fs/cgroup/systemd /sys/fs/cgroup/unified -maxdepth 3 -type d 2>/dev/null | sort))
}

ct_stop() {
  [ -n "$CT_NSPAWN" ] || return 0
  if kill -0 "$CT_NSPAWN" 2>/dev/null; then
    ct systemctl poweroff >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 60))
    while kill -0 "$CT_NSPAWN" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill -KILL "$CT_NSPAWN" 2>/dev/null || true
  fi
  wait "$CT_NSPAWN" 2>/dev/null || true
  CT_NSPAWN=
  local d
  for d in "${CT_CGROUPS[@]}"; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  return 0
}
