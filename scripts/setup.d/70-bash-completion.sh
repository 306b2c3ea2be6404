#!/usr/bin/env bash
# bash-completion: tests/integration/test_completion.py drives the installed
# completion with the real helpers (_init_completion, _filedir, _command_offset).
set -euo pipefail
dpkg-query -W -f='${Status}' bash-completion 2>/dev/null | grep -q "install ok installed" && exit 0
echo "setup.d/70-bash-completion: installing bash-completion"
${SUDO:-} apt-get update -qq
DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq --no-install-recommends bash-completion
