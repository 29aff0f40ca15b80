# `cmake --install` and the Debian package (`cpack -G DEB` in the build directory, or the
# `package` target). What goes where, with the default prefix /usr/local and the package's /usr:
#   sbin/andromedad, bin/andromedactl
#   lib/systemd/system/andromedad@.service     (its paths rewritten to this prefix's)
#   share/man/man8/andromedad.8.gz, andromedactl.8.gz
#   share/bash-completion/completions/andromedactl
#   share/doc/andromeda/examples/*.toml, share/doc/andromeda/*.md
#   share/andromeda/bpf/andromeda_xdp.bpf.o    (for inspection: andromedad runs the copy compiled
#                                               into its skeleton, never this file)
include(GNUInstallDirs)

install(TARGETS andromedad DESTINATION ${CMAKE_INSTALL_SBINDIR})
install(TARGETS andromedactl DESTINATION ${CMAKE_INSTALL_BINDIR})

# The unit names the programs by absolute path: the checked-in file says /usr/sbin and /usr/bin
# (the package's), rewritten at install time when the prefix is another.
install(CODE "set(ANDROMEDA_UNIT_SOURCE \"${PROJECT_SOURCE_DIR}/configs/andromedad@.service\")
set(ANDROMEDA_UNIT_SBINDIR \"${CMAKE_INSTALL_SBINDIR}\")
set(ANDROMEDA_UNIT_BINDIR \"${CMAKE_INSTALL_BINDIR}\")")
install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/InstallUnit.cmake)

# Man pages, compressed as Debian ships them (gzip -n: no name or time stamp, reproducible).
set(man_pages)
foreach(page andromedad.8 andromedactl.8)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/packaging/${page}.gz
                     COMMAND gzip -9 -n -c ${PROJECT_SOURCE_DIR}/docs/man/${page} > ${CMAKE_BINARY_DIR}/packaging/${page}.gz
                     DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/${page} VERBATIM)
  list(APPEND man_pages ${CMAKE_BINARY_DIR}/packaging/${page}.gz)
endforeach()
add_custom_target(andromeda_man_pages ALL DEPENDS ${man_pages})
install(FILES ${man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)

install(FILES ${PROJECT_SOURCE_DIR}/scripts/completion/andromedactl.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME andromedactl)
install(FILES ${PROJECT_SOURCE_DIR}/configs/node1.toml ${PROJECT_SOURCE_DIR}/configs/node2.toml
              ${PROJECT_SOURCE_DIR}/configs/multi-vpc.toml ${PROJECT_SOURCE_DIR}/configs/nat-gateway.toml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES ${PROJECT_SOURCE_DIR}/docs/operations.md ${PROJECT_SOURCE_DIR}/docs/configuration.md
              ${PROJECT_SOURCE_DIR}/docs/etcd.md ${PROJECT_SOURCE_DIR}/docs/nat.md ${PROJECT_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_BINARY_DIR}/bpf/andromeda_xdp.bpf.o DESTINATION ${CMAKE_INSTALL_DATADIR}/andromeda/bpf)

# The Debian package. Library dependencies come from dpkg-shlibdeps (dpkg-dev), so they match
# the libraries the binaries were linked against.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME andromeda)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Andromeda maintainers <andromeda@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "host SDN data plane (XDP, tc and AF_XDP)")
set(CPACK_PACKAGE_DESCRIPTION "andromedad joins the tenant ports of a Linux host into VPCs spanning the fleet,
carried in an L2-over-UDP overlay; the kernel (XDP, tc) carries what the daemon decides.
andromedactl inspects and controls it. Includes the systemd unit andromedad@.service.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd")  # the unit, and libsystemd's sd_notify at run time
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "bpftool, iproute2")  # the pins and links, as docs/operations.md reads them
set(CPACK_STRIP_FILES ON)
include(CPack)
