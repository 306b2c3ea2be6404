# `cpack -G DEB` (or `cmake --build . --target package`) builds
# resource-tracker_<version>_<arch>.deb, which installs into /usr and /etc.
# The prefix is /usr unless the build was configured with another
# (CMakeLists.txt); the daemon's compiled-in paths (its default
# configuration file) follow the prefix, so a package of another prefix
# would put the files where its binaries do not look: cpack refuses it
# before building anything, saying how to configure.
set(RT_DEB_DIR ${PROJECT_BINARY_DIR}/deb)
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "resource-tracker: prefix ${CMAKE_INSTALL_PREFIX}: an install by hand; cpack -G DEB needs the "
                 "prefix /usr")
endif()
file(CONFIGURE OUTPUT ${RT_DEB_DIR}/cpack-project.cmake CONTENT [=[
if(CPACK_GENERATOR STREQUAL "DEB" AND NOT "@CMAKE_INSTALL_PREFIX@" STREQUAL "/usr")
  message(FATAL_ERROR "resource-tracker: this build's prefix is @CMAKE_INSTALL_PREFIX@; a Debian package "
                      "installs into /usr and /etc: configure with -DCMAKE_INSTALL_PREFIX=/usr (the default "
                      "of a new build directory)")
endif()
]=] @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${RT_DEB_DIR}/cpack-project.cmake)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME resource-tracker)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "resource tracker for shared GPU servers")
set(CPACK_PACKAGE_DESCRIPTION
    "resource-trackerd samples the host (CPU, memory, disks, network, NVIDIA\n\
and AMD GPUs) and tracks process trees as named jobs for every user of a\n\
shared machine; resource-trackerctl runs and queries jobs over a varlink\n\
socket. Job data can be uploaded to the Sentinel API.\n\
Installing the package enables nothing: run\n\
`systemctl enable --now resource-trackerd`.")
set(RT_PACKAGE_MAINTAINER "Spare Cores <https://sparecores.com>" CACHE STRING "Debian Maintainer field")
set(CPACK_PACKAGE_CONTACT "${RT_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${RT_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://sparecores.com")
# Depends: every shared library the binaries link comes from dpkg-shlibdeps
# (dpkg-dev, installed by scripts/setup.sh). Run-time dependencies that are
# not linked libraries are listed here by hand, one per line with the reason:
set(RT_DEB_RUNTIME_DEPENDS
    procps          # /bin/kill of the unit's ExecReload=
    libjs-dygraphs  # the charts `resource-trackerctl report` inlines
)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
list(JOIN RT_DEB_RUNTIME_DEPENDS ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
# The roots for HTTPS uploads.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ca-certificates")
# Stripped binaries; their debug information goes into
# resource-tracker-dbgsym_<version>_<arch>.ddeb, found by build ID
# (/usr/lib/debug/.build-id/). Needs a build with -g (Release has it).
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)

# Maintainer scripts (the group, daemon-reload; no enable, no start) and
# the configuration file as a conffile, so upgrades keep local edits.
if(IS_ABSOLUTE "${RT_SYSUSERS_DIR}")
  set(RT_SYSUSERS_FILE "${RT_SYSUSERS_DIR}/resource-tracker.conf")
else()
  set(RT_SYSUSERS_FILE "${CMAKE_INSTALL_PREFIX}/${RT_SYSUSERS_DIR}/resource-tracker.conf")
endif()
foreach(script postinst prerm postrm)
  set(src ${PROJECT_SOURCE_DIR}/packaging/deb/${script})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  file(READ ${src} content)
  string(REPLACE "@SYSUSERS_FILE@" "${RT_SYSUSERS_FILE}" content "${content}")
  file(CONFIGURE OUTPUT ${RT_DEB_DIR}/${script} CONTENT "${content}" @ONLY)
  file(CHMOD ${RT_DEB_DIR}/${script} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
       GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endforeach()
file(CONFIGURE OUTPUT ${RT_DEB_DIR}/conffiles CONTENT "${RT_SYSCONFDIR}/resource-trackerd.conf\n" @ONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${RT_DEB_DIR}/conffiles;${RT_DEB_DIR}/postinst;${RT_DEB_DIR}/prerm;${RT_DEB_DIR}/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

include(CPack)
