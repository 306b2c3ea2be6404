# The systemd container test: builds the .deb from a clean clone with the
# README's commands in a fresh Debian 12, installs it in another, boots that
# with systemd as PID 1 under systemd-nspawn and checks the service end to
# end. Needs root and the Debian mirror (apt); skipped (77) where it cannot run.
add_test(NAME systemd.container COMMAND /bin/bash ${CMAKE_CURRENT_LIST_DIR}/test_container.sh)
set_tests_properties(systemd.container PROPERTIES
  ENVIRONMENT "${RT_TEST_ENV}" TIMEOUT 900 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
  LABELS "integration;container")
