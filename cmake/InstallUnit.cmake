# Run by `cmake --install` (and CPack): writes the systemd unit with the programs' paths under the
# prefix being installed to, which only install time knows (CPack installs to /usr, a plain
# `cmake --install` to CMAKE_INSTALL_PREFIX or --prefix). Packaging.cmake sets the ANDROMEDA_UNIT_*.
file(READ ${ANDROMEDA_UNIT_SOURCE} unit)
string(REPLACE "/usr/sbin/andromedad" "${CMAKE_INSTALL_PREFIX}/${ANDROMEDA_UNIT_SBINDIR}/andromedad" unit "${unit}")
string(REPLACE "/usr/bin/andromedactl" "${CMAKE_INSTALL_PREFIX}/${ANDROMEDA_UNIT_BINDIR}/andromedactl" unit "${unit}")
set(destination "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
message(STATUS "Installing: ${destination}/andromedad@.service")
file(MAKE_DIRECTORY ${destination})
file(WRITE ${destination}/andromedad@.service "${unit}")
