# Run commands in copies of a cached Debian 12 root file system under
# systemd-nspawn, or boot one with systemd as PID 1 (source this file).
#   ct_overlay ROOTFS DIR   a writable copy of ROOTFS at DIR/root (overlayfs,
#                           changes in a tmpfs); ct_stop unmounts it
#   ct_run ROOT ARGS… -- CMD…  run CMD in ROOT, not booted, on the host's
#                           network (apt); ARGS are more nspawn options
#   ct_boot ROOT SHARE      boot ROOT; SHARE is bind-mounted read-only at /opt/rt-test
#   ct CMD…                 run CMD in the booted container (clean environment)
#   ct_stop                 power off and clean up
# Recipe: test-environment.md §4c. --register=no --keep-unit because the
# host has no systemd-machined/bus; the cached tree stays pristine.

CT_NSPAWN=
CT_PID1=
CT_LOG=
CT_CGROUPS=()
CT_MOUNTS=()

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

ct_overlay() {
  local lower=$1 dir=$2
  mkdir -p "$dir/rw" "$dir/root"
  mount -t tmpfs -o mode=0755 rt-ct "$dir/rw" || return 1
  CT_MOUNTS=("$dir/rw" "${CT_MOUNTS[@]}")
  mkdir "$dir/rw/upper" "$dir/rw/work"
  mount -t overlay rt-ct -o "lowerdir=$lower,upperdir=$dir/rw/upper,workdir=$dir/rw/work" "$dir/root" ||
    return 1
  CT_MOUNTS=("$dir/root" "${CT_MOUNTS[@]}")
}

# Cgroups nspawn may leave behind in the host's hierarchies (hybrid mode):
# those that appeared since ct_cgroups printed the list are removed.
ct_cgroups() { find /sys/fs/cgroup/systemd /sys/fs/cgroup/unified -maxdepth 3 -type d 2>/dev/null | sort; }
ct_cgroups_new() { comm -13 <(echo "$1") <(ct_cgroups); }
ct_cgroups_remove() {
  local d
  for d in "$@"; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  return 0
}

ct_run() {
  local root=$1 args=() before rc=0
  shift
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  shift
  before=$(ct_cgroups)
  systemd-nspawn -q -D "$root" --register=no --keep-unit --console=pipe --resolv-conf=replace-host \
    "${args[@]}" "$@" || rc=$?
  ct_cgroups_remove $(ct_cgroups_new "$before")
  return $rc
}

ct_boot() {
  local root=$1 share=$2 before
  CT_LOG="$share/nspawn.log"
  before=$(ct_cgroups)
  systemd-nspawn -q -D "$root" -b --register=no --keep-unit --console=passive \
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
  mapfile -t CT_CGROUPS < <(ct_cgroups_new "$before")
}

ct_stop() {
  ct_poweroff
  local m
  for m in "${CT_MOUNTS[@]}"; do umount "$m" 2>/dev/null || umount -l "$m"; done
  CT_MOUNTS=()
}

ct_poweroff() {
  [ -n "$CT_NSPAWN" ] || return 0
  if kill -0 "$CT_NSPAWN" 2>/dev/null; then
    ct systemctl poweroff >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 60))
    while kill -0 "$CT_NSPAWN" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill -KILL "$CT_NSPAWN" 2>/dev/null || true
  fi
  wait "$CT_NSPAWN" 2>/dev/null || true
  CT_NSPAWN=
  ct_cgroups_remove "${CT_CGROUPS[@]}"
}
