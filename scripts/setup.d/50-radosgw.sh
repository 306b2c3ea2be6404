#!/usr/bin/env bash
# Ceph radosgw (a strict SigV4 S3 server) for the upload integration tests:
# mon + memstore osd + rgw on 127.0.0.1, started by tests/upload/rgw.py.
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
rt_apt_install setup.d/radosgw radosgw ceph-mon ceph-osd ceph-common
