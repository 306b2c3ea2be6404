#!/usr/bin/env bash
# bash-completion: tests/integration/test_completion.py drives the installed
# completion with the real helpers (_init_completion, _filedir, _command_offset).
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
rt_apt_install setup.d/bash-completion bash-completion
