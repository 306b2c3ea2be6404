# The systemd container test: boots Debian 12 with systemd as PID 1 under
# systemd-nspawn, installs the .deb built from this tree and checks the
# service end to end. Needs root; skipped (77) where it cannot run.
add_test(NAME systemd.container COMMAND /bin/bash ${CMAKE_CURRENT_LIST_DIR}/test_container.sh)
set_tests_properties(systemd.container PROPERTIES
  ENVIRONMENT "${RT_TEST_ENV}" TIMEOUT 900 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
  LABELS "integration;container")
