#!/usr/bin/env bash
# Integration tests of authorisation and durability: useradd/groupadd/userdel
# (passwd), setpriv (util-linux), mount/umount of small tmpfs state dirs (mount),
# mkfs.ext4 (e2fsprogs) for a file system with reserved blocks (disk use as df).
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
rt_apt_install setup.d/users-and-mounts passwd util-linux mount e2fsprogs
