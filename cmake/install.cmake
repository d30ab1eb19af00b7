# `cmake --install build --prefix P` lays out a relocatable repoctx, and `cpack -G DEB` (in the build
# folder) packs the same tree as a .deb:
#
#   P/bin/repoctx
#   P/lib/repoctx/        llama.cpp's shared libraries (found through RUNPATH $ORIGIN/../lib/repoctx)
#   P/libexec/repoctx/    llama-server (bench-llm)
#   P/share/repoctx/      the benchmarks' Python reference implementations, bench-serve's MCP client script
#
# Nothing refers to the build machine's paths: the binary finds its files relative to itself
# (src/util/paths.h), and the RUNPATHs of the copied llama.cpp binaries are rewritten at install time.
include(GNUInstallDirs)
# The binary is linked once, with the RUNPATH it is installed with ($ORIGIN/../lib/repoctx), and the build
# tree lays llama.cpp's libraries out the same way (links into the dependency cache), so the build-tree
# binary runs as it is. A build RUNPATH rewritten at install time would carry CMake's trailing ':' (room for
# the rewrite), an empty entry that makes the loader search the current folder for every library.
set_target_properties(repoctx PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}/repoctx"
                                         BUILD_WITH_INSTALL_RPATH ON)
if(REPOCTX_WITH_LLAMA)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/${CMAKE_INSTALL_LIBDIR}/repoctx)
  file(GLOB _llama_libs "${LLAMA_PREFIX}/lib/*.so*")
  foreach(_lib IN LISTS _llama_libs)
    get_filename_component(_name "${_lib}" NAME)
    file(CREATE_LINK "${_lib}" "${CMAKE_BINARY_DIR}/${CMAKE_INSTALL_LIBDIR}/repoctx/${_name}" SYMBOLIC)
  endforeach()
endif()
install(TARGETS repoctx RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/bench/reference/ref_index.py ${CMAKE_SOURCE_DIR}/bench/reference/ref_grep.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/repoctx/reference)
install(FILES ${CMAKE_SOURCE_DIR}/bench/mcp_roundtrip.mjs DESTINATION ${CMAKE_INSTALL_DATADIR}/repoctx/bench)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/docs/LLM.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
if(REPOCTX_WITH_LLAMA)
  file(GLOB _llama_libs "${LLAMA_PREFIX}/lib/*.so*")
  install(FILES ${_llama_libs} DESTINATION ${CMAKE_INSTALL_LIBDIR}/repoctx)
  install(PROGRAMS ${LLAMA_SERVER_BIN} DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/repoctx)
  # setup.sh built llama.cpp with RUNPATH = its own prefix; the installed copies look beside themselves.
  install(CODE "
    file(GLOB _libs \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/repoctx/*.so*\")
    foreach(_f IN LISTS _libs)
      if(NOT IS_SYMLINK \"\${_f}\")
        file(RPATH_CHANGE FILE \"\${_f}\" OLD_RPATH \"${LLAMA_PREFIX}/lib\" NEW_RPATH \"\$ORIGIN\")
      endif()
    endforeach()
    file(RPATH_CHANGE FILE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBEXECDIR}/repoctx/llama-server\"
         OLD_RPATH \"${LLAMA_PREFIX}/lib\" NEW_RPATH \"\$ORIGIN/../../${CMAKE_INSTALL_LIBDIR}/repoctx\")
  ")
endif()

set(CPACK_PACKAGE_NAME repoctx)
set(CPACK_PACKAGE_VENDOR "repoctx")
set(CPACK_PACKAGE_CONTACT "repoctx developers <dev@repoctx.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "finds the repository context an LLM needs to write code")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the binaries' needs (dpkg-shlibdeps)
# Libraries opened at first use (util/dynlib.h), which dpkg-shlibdeps cannot see: XGBoost ranks every
# structural query; the others serve one feature each (commit histories, the OpenAI-compatible backend,
# reasoning subspaces).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libxgboost0")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libgit2-1.5, libcurl4, libopenblas0 | libblas3, liblapacke")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CMAKE_BINARY_DIR}/_CPack_Packages/Linux/DEB/${CPACK_PACKAGE_NAME}-${PROJECT_VERSION}-Linux/usr/${CMAKE_INSTALL_LIBDIR}/repoctx")
include(CPack)
