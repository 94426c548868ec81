# What `cmake --install` and the .deb put on a machine: libxccl.so (with its SONAME
# link), include/xccl/xccl.h, a CMake package (find_package(xccl) -> xccl::xccl), a
# pkg-config file (xccl.pc) and xccl-perf. The rest of the project (xm, its tests and
# benchmarks) is a tool run from the build tree, not installed.
include(CMakePackageConfigHelpers)

install(TARGETS xccl EXPORT xcclTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT xccl
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/xccl/xccl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/xccl COMPONENT xccl)
install(TARGETS xccl-perf RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT xccl)

set(xccl_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/xccl)
install(EXPORT xcclTargets NAMESPACE xccl:: DESTINATION ${xccl_cmake_dir} COMPONENT xccl)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/xcclConfig.cmake.in ${PROJECT_BINARY_DIR}/xcclConfig.cmake
                              INSTALL_DESTINATION ${xccl_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/xcclConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/xcclConfig.cmake ${PROJECT_BINARY_DIR}/xcclConfigVersion.cmake
        DESTINATION ${xccl_cmake_dir} COMPONENT xccl)

# pkg-config: paths relative to the prefix the file was installed under, so a package
# unpacked elsewhere (a DESTDIR, a .deb in a chroot) still points at itself.
file(RELATIVE_PATH xccl_pc_prefix /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
configure_file(${CMAKE_CURRENT_LIST_DIR}/xccl.pc.in ${PROJECT_BINARY_DIR}/xccl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/xccl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT xccl)

# `cpack -G DEB` in the build tree: xccl_<version>_<arch>.deb (the library, header,
# CMake and pkg-config files, xccl-perf) and, when xccl_torch was built,
# python3-xccl-torch_<version>_<arch>.deb (depends on xccl and Debian's PyTorch);
# dependencies from dpkg-shlibdeps.
set(CPACK_PACKAGE_NAME xccl)
set(CPACK_PACKAGE_VENDOR xingmai)
set(CPACK_PACKAGE_CONTACT "xingmai developers <xingmai@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "xccl: NCCL-style collectives over shared memory and multi-rail TCP")
set(CPACK_GENERATOR DEB)
set(CPACK_COMPONENTS_ALL xccl)
if(XM_TORCH_BUILT)
  list(APPEND CPACK_COMPONENTS_ALL torch)
endif()
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_XCCL_PACKAGE_NAME xccl)
set(CPACK_DEBIAN_TORCH_PACKAGE_NAME python3-xccl-torch)
# dpkg-shlibdeps cannot see libxccl in the sibling package: the dependencies by hand.
set(CPACK_DEBIAN_TORCH_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_TORCH_PACKAGE_DEPENDS "xccl (= ${PROJECT_VERSION}), python3-torch (>= 1.13), libtorch1.13")
set(CPACK_DEBIAN_TORCH_PACKAGE_SECTION python)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)

# Everything the packages hold, built in one go (`cmake --build B --target xccl-dist`).
add_custom_target(xccl-dist)
add_dependencies(xccl-dist xccl xccl-perf)
if(XM_TORCH_BUILT)
  add_dependencies(xccl-dist xccl_torch_C)
endif()
