# `cmake --install build --prefix P` and `cpack` (docs/install.md): the three tools, with
# dsbench-slowfs beside dsbench (where dsbench looks for it); the libraries with their public
# headers (P/include/dspack/<folder>/*.h) and an exported package, so find_package(dspack) works; a
# pkg-config file; man pages generated from the tools' own --help (scripts/man.sh, help2man);
# bash completion; the Python package (python/CMakeLists.txt). cpack makes a .deb whose Depends
# come from dpkg-shlibdeps.
include(CMakePackageConfigHelpers)

install(TARGETS dspack dsbench dssync RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(DSPACK_SLOWFS)
  install(TARGETS dsbench-slowfs RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# dspack::dspack, the umbrella (as fmt::fmt, TBB::tbb): every library below.
add_library(dspack_all INTERFACE)
set_target_properties(dspack_all PROPERTIES EXPORT_NAME dspack)
target_link_libraries(dspack_all INTERFACE dsformats dsdatasets dspack_lib dssync_lib dscore)
add_library(dspack::dspack ALIAS dspack_all)
set(dspack_export dscore dsformats dsdatasets dspack_lib dssync_lib dspack_all)
install(TARGETS ${dspack_export} EXPORT dspackTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dspack)

# The public headers: the API's entry points and what they include, transitively (computed here
# from their #include lines, so the set follows the code). Internals stay out (pack/packer_impl.h,
# formats/interop/lmdb_common.h, the engines' own headers): tests/e2e/install.sh checks that the
# installed set is closed and that each header compiles on its own.
set(dspack_public_entries
    src/status.h formats/layout.h formats/layout_options.h formats/registry.h
    formats/shard_assignment.h formats/subset.h pack/packer.h pack/inspect.h pack/partition.h
    sync/syncer.h sync/staged.h datasets/synth.h)
set(dspack_public_headers)
set(todo ${dspack_public_entries})
while(todo)
  list(POP_FRONT todo header)
  if(header IN_LIST dspack_public_headers)
    continue()
  endif()
  list(APPEND dspack_public_headers ${header})
  # A change of what a public header includes changes the closure: configure again.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${header})
  file(STRINGS ${PROJECT_SOURCE_DIR}/${header} includes REGEX "^#include \"[^\"]+\"")
  foreach(line ${includes})
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" inc "${line}")
    if(EXISTS ${PROJECT_SOURCE_DIR}/${inc})
      list(APPEND todo ${inc})
    endif()
  endforeach()
endwhile()
foreach(header ${dspack_public_headers})
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dspack/${dir})
endforeach()
set(cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/dspack)
install(EXPORT dspackTargets NAMESPACE dspack:: DESTINATION ${cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dspackConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/dspackConfig.cmake
                              INSTALL_DESTINATION ${cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dspackConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/dspackConfig.cmake
              ${PROJECT_BINARY_DIR}/dspackConfigVersion.cmake DESTINATION ${cmake_dir})
configure_file(${PROJECT_SOURCE_DIR}/cmake/dspack.pc.in ${PROJECT_BINARY_DIR}/dspack.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/dspack.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Man pages from --help, at build time (help2man is in scripts/deps.sh).
find_program(HELP2MAN help2man)
if(HELP2MAN)
  set(man_pages)
  foreach(entry "dspack|pack ML datasets into verified sequential shards"
                "dsbench|storage benchmarks for ML training data"
                "dssync|stage a dataset onto local disk")
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 tool)
    list(GET parts 1 what)
    set(page ${PROJECT_BINARY_DIR}/man/${tool}.1)
    add_custom_command(OUTPUT ${page}
                       COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
                       COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/man.sh $<TARGET_FILE:${tool}>
                               ${page} "${what}"
                       DEPENDS ${tool} ${PROJECT_SOURCE_DIR}/scripts/man.sh VERBATIM)
    list(APPEND man_pages ${page})
  endforeach()
  add_custom_target(man ALL DEPENDS ${man_pages})
  install(FILES ${man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "dspack: help2man not found, no man pages (scripts/deps.sh installs it)")
endif()

foreach(tool dspack dsbench dssync)
  install(FILES ${PROJECT_SOURCE_DIR}/scripts/completion/dspack.bash
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME ${tool})
endforeach()

# cpack -G DEB (in the build directory): /usr/bin/dspack etc.; Depends from dpkg-shlibdeps.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dspack)
set(CPACK_PACKAGE_VENDOR dspack)
set(CPACK_PACKAGE_CONTACT "dspack developers <dspack@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "ML training data on storage: pack into shards, benchmark the storage, stage locally")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
# The Python package (dsbench replay --loader torch) needs Python and numpy, which no ELF
# dependency shows; torch itself is optional.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3 (>= 3.11), python3-numpy")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, python3-torchvision, fio, openmpi-bin")
include(CPack)
