# Installed files besides the binaries: systemd units, sample configuration,
# varlink IDL, man pages, bash completion, sysusers.d, journal catalog and the
# copyright file.
# Units and sysusers.d go where systemd looks for them: pkg-config's
# directories when installing to /usr (the Debian package), else under the
# prefix (systemd also searches /usr/local/lib/systemd/system).

pkg_get_variable(RT_PC_UNITDIR systemd systemdsystemunitdir)
pkg_get_variable(RT_PC_SYSUSERSDIR systemd sysusersdir)
pkg_get_variable(RT_PC_CATALOGDIR systemd catalogdir)
pkg_get_variable(RT_PC_COMPLETIONSDIR bash-completion completionsdir)

macro(rt_pick_dir var pcvalue fallback)
  if(NOT ${var})
    if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND NOT "${pcvalue}" STREQUAL "")
      set(${var} "${pcvalue}")
    else()
      set(${var} "${fallback}")
    endif()
  endif()
endmacro()
rt_pick_dir(RT_SYSTEMD_UNIT_DIR "${RT_PC_UNITDIR}" "lib/systemd/system")
rt_pick_dir(RT_SYSUSERS_DIR "${RT_PC_SYSUSERSDIR}" "lib/sysusers.d")
rt_pick_dir(RT_CATALOG_DIR "${RT_PC_CATALOGDIR}" "lib/systemd/catalog")
rt_pick_dir(RT_COMPLETIONS_DIR "${RT_PC_COMPLETIONSDIR}"
            "${CMAKE_INSTALL_DATADIR}/bash-completion/completions")
set(RT_SYSTEMD_UNIT_DIR "${RT_SYSTEMD_UNIT_DIR}" CACHE PATH "systemd system unit directory")
set(RT_SYSUSERS_DIR "${RT_SYSUSERS_DIR}" CACHE PATH "sysusers.d directory")
set(RT_CATALOG_DIR "${RT_CATALOG_DIR}" CACHE PATH "journal catalog directory")
set(RT_COMPLETIONS_DIR "${RT_COMPLETIONS_DIR}" CACHE PATH "bash completion directory")

# Units: the source files name the Debian paths; other prefixes get theirs.
# The Prometheus exporter's socket and per-scrape service, and the textfile
# writer, run resource-trackerctl (docs/metrics.md).
foreach(unit resource-trackerd.service resource-trackerd.socket resource-tracker-exporter.socket
             resource-tracker-exporter@.service resource-tracker-textfile.service)
  set(src ${PROJECT_SOURCE_DIR}/units/${unit})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  file(READ ${src} content)
  string(REPLACE "/usr/sbin/resource-trackerd" "${CMAKE_INSTALL_FULL_SBINDIR}/resource-trackerd"
         content "${content}")
  string(REPLACE "/usr/bin/resource-trackerctl" "${CMAKE_INSTALL_FULL_BINDIR}/resource-trackerctl"
         content "${content}")
  string(REPLACE "/etc/resource-tracker/" "${RT_SYSCONFDIR}/" content "${content}")
  file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/units/${unit} CONTENT "${content}" @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/units/${unit} DESTINATION ${RT_SYSTEMD_UNIT_DIR})
endforeach()

install(FILES ${PROJECT_SOURCE_DIR}/etc/resource-trackerd.conf DESTINATION ${RT_SYSCONFDIR})
install(FILES ${PROJECT_SOURCE_DIR}/packaging/resource-tracker.sysusers
        DESTINATION ${RT_SYSUSERS_DIR} RENAME resource-tracker.conf)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/resource-tracker.catalog DESTINATION ${RT_CATALOG_DIR})
install(FILES ${PROJECT_SOURCE_DIR}/packaging/bash-completion/resource-trackerctl
        DESTINATION ${RT_COMPLETIONS_DIR})

# Copyright and license statement, where Debian wants it
# (/usr/share/doc/resource-tracker/copyright with the /usr prefix).
install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
# What the exporter publishes (resource-trackerctl(1) points here).
install(FILES ${PROJECT_SOURCE_DIR}/docs/metrics.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The varlink interface description.
install(FILES ${PROJECT_SOURCE_DIR}/daemon/api/com.sparecores.ResourceTracker.varlink
        DESTINATION ${CMAKE_INSTALL_DATADIR}/resource-tracker)

# Man pages, compressed as Debian wants them (gzip -9n: reproducible).
file(GLOB RT_MAN_PAGES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/*.[158])
set(RT_MAN_GZ)
foreach(page ${RT_MAN_PAGES})
  get_filename_component(name ${page} NAME)
  string(REGEX REPLACE ".*\\.([158])$" "\\1" section ${name})
  set(gz ${PROJECT_BINARY_DIR}/man/${name}.gz)
  add_custom_command(OUTPUT ${gz}
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
                     COMMAND gzip -9nc ${page} > ${gz}
                     DEPENDS ${page} VERBATIM)
  list(APPEND RT_MAN_GZ ${gz})
  install(FILES ${gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
add_custom_target(man ALL DEPENDS ${RT_MAN_GZ})
