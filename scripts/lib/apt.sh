# Quiet, idempotent apt-get for the setup scripts (source this file).
#   rt_apt_install LABEL [-t SUITE] PKG…
# installs the PKGs that are not installed yet, printing one line; apt's and
# dpkg's output goes to a log that is shown only when something fails.
# Needs root, or $SUDO=sudo.

rt_apt_install() {
  local label=$1 target=() p missing=()
  shift
  if [ "${1:-}" = -t ]; then target=(-t "$2"); shift 2; fi
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "$label: installing ${missing[*]}"
  local log
  log=$(mktemp /tmp/rt-apt.XXXXXX)
  if ! { ${SUDO:-} apt-get update -qq &&
         ${SUDO:-} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
           "${target[@]}" "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "$label: apt-get failed" >&2
    return 1
  fi
  rm -f "$log"
}
