# `cmake --install build [--prefix DIR]`: the CMake package for C++ users (README.md, "Using
# fpconform from CMake"). Included at the end of the top CMakeLists.txt, after every library.
#
# Layout under the prefix:
#   include/fpconform/<folder>/*.h   the public headers of every fpconform_library, in their
#                                    source folders, so that #include "reports/audit.h" works as
#                                    in the tree (the exported include directory is
#                                    include/fpconform, which keeps our generic folder names,
#                                    formats/, cases/, reports/, out of the prefix's include/)
#   lib/libfpconform_<name>.a        the static libraries
#   lib/cmake/fpconform/             fpconformConfig.cmake, ...ConfigVersion.cmake,
#                                    fpconformTargets*.cmake, fpconformAudit.cmake
#   bin/fpconform                    the CLI (imported target fpconform::cli)
#   share/fpconform/models/          the model presets (accumulation/models/*.toml, SOURCES.md)
#   share/fpconform/composite-models/ the elementwise implementation models (composite/models/*.toml)
#   share/fpconform/attention-models/ the attention models (composite/attention_models/*.toml)
#   share/fpconform/standard_sweep.toml, plot_report.py
#
# Targets (namespace fpconform::): one per library (fpconform::audit, fpconform::tensor_file,
# fpconform::accumulation, ...: the in-tree alias names), fpconform::fpconform (all of them),
# fpconform::gtest (reports/gtest_audit.h: links GTest::gtest) and fpconform::cli.
# fpconform::fpconform also defines FPCONFORM_DEFAULT_MODELS_DIR and FPCONFORM_DEFAULT_SWEEP_FILE
# (string literals: the installed share/fpconform paths, or the source tree's in-tree), which a
# program may use as its defaults, and, installed, FPCONFORM_DEFAULT_DATA_DIR (share/fpconform),
# the anchor the GoogleTest helper passes to base/data_dir.h's lookups.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FPCONFORM_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/fpconform")
set(FPCONFORM_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/fpconform")
set(FPCONFORM_INSTALL_DATADIR "${CMAKE_INSTALL_DATADIR}/fpconform")

# ---- Libraries and their headers. ----
get_property(_fpconform_libraries GLOBAL PROPERTY FPCONFORM_LIBRARIES)
foreach(_lib IN LISTS _fpconform_libraries)
  string(REGEX REPLACE "^fpconform_" "" _name "${_lib}")
  set_target_properties(${_lib} PROPERTIES EXPORT_NAME ${_name})
  target_include_directories(${_lib} PUBLIC
                             $<INSTALL_INTERFACE:${FPCONFORM_INSTALL_INCLUDEDIR}>)
  get_target_property(_dir ${_lib} SOURCE_DIR)
  get_target_property(_srcs ${_lib} SOURCES)
  file(RELATIVE_PATH _folder "${PROJECT_SOURCE_DIR}" "${_dir}")
  foreach(_src IN LISTS _srcs)
    if(_src MATCHES "\\.h$")
      install(FILES "${_dir}/${_src}" DESTINATION "${FPCONFORM_INSTALL_INCLUDEDIR}/${_folder}")
    endif()
  endforeach()
endforeach()

# fpconform::fpconform: every component library, plus where the installed data lies.
add_library(fpconform_fpconform INTERFACE)
add_library(fpconform::fpconform ALIAS fpconform_fpconform)
set_target_properties(fpconform_fpconform PROPERTIES EXPORT_NAME fpconform)
target_link_libraries(fpconform_fpconform INTERFACE ${_fpconform_libraries})
set(_src "${PROJECT_SOURCE_DIR}")
set(_data "$<INSTALL_PREFIX>/${FPCONFORM_INSTALL_DATADIR}")
target_compile_definitions(fpconform_fpconform INTERFACE
  "$<BUILD_INTERFACE:FPCONFORM_DEFAULT_MODELS_DIR=\"${_src}/accumulation/models\">"
  "$<BUILD_INTERFACE:FPCONFORM_DEFAULT_SWEEP_FILE=\"${_src}/reports/standard_sweep.toml\">"
  "$<INSTALL_INTERFACE:FPCONFORM_DEFAULT_MODELS_DIR=\"${_data}/models\">"
  "$<INSTALL_INTERFACE:FPCONFORM_DEFAULT_SWEEP_FILE=\"${_data}/standard_sweep.toml\">"
  "$<INSTALL_INTERFACE:FPCONFORM_DEFAULT_DATA_DIR=\"${_data}\">")

# fpconform::gtest: reports/gtest_audit.h (header only; the consumer's GoogleTest).
add_library(fpconform_gtest INTERFACE)
add_library(fpconform::gtest ALIAS fpconform_gtest)
set_target_properties(fpconform_gtest PROPERTIES EXPORT_NAME gtest)
target_link_libraries(fpconform_gtest INTERFACE fpconform_fpconform GTest::gtest)
install(FILES "${PROJECT_SOURCE_DIR}/reports/gtest_audit.h"
        DESTINATION "${FPCONFORM_INSTALL_INCLUDEDIR}/reports")

# fpconform::cli in the tree too, so that fpconform_add_audit works the same in both.
set_target_properties(fpconform PROPERTIES EXPORT_NAME cli)
add_executable(fpconform::cli ALIAS fpconform)

install(TARGETS ${_fpconform_libraries} fpconform_fpconform fpconform_gtest fpconform
        EXPORT fpconformTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(EXPORT fpconformTargets NAMESPACE fpconform:: DESTINATION "${FPCONFORM_INSTALL_CMAKEDIR}")

# ---- Data: presets, the standard sweep, the report renderer. ----
install(DIRECTORY "${PROJECT_SOURCE_DIR}/accumulation/models/"
        DESTINATION "${FPCONFORM_INSTALL_DATADIR}/models"
        FILES_MATCHING PATTERN "*.toml" PATTERN "*.md")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/composite/models/"
        DESTINATION "${FPCONFORM_INSTALL_DATADIR}/composite-models"
        FILES_MATCHING PATTERN "*.toml" PATTERN "*.md")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/composite/attention_models/"
        DESTINATION "${FPCONFORM_INSTALL_DATADIR}/attention-models"
        FILES_MATCHING PATTERN "*.toml")
install(FILES "${PROJECT_SOURCE_DIR}/reports/standard_sweep.toml"
        DESTINATION "${FPCONFORM_INSTALL_DATADIR}")
install(PROGRAMS "${PROJECT_SOURCE_DIR}/reports/plot_report.py"
        DESTINATION "${FPCONFORM_INSTALL_DATADIR}")

# ---- The package files. ----
configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/fpconformConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/fpconformConfig.cmake"
  INSTALL_DESTINATION "${FPCONFORM_INSTALL_CMAKEDIR}"
  PATH_VARS FPCONFORM_INSTALL_DATADIR FPCONFORM_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/fpconformConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/fpconformConfig.cmake"
              "${PROJECT_BINARY_DIR}/fpconformConfigVersion.cmake"
              "${CMAKE_CURRENT_LIST_DIR}/fpconformAudit.cmake"
              "${CMAKE_CURRENT_LIST_DIR}/fpconformAuditExpect.cmake"
        DESTINATION "${FPCONFORM_INSTALL_CMAKEDIR}")

include(fpconformAudit)

# ---- The test of all the above: install this build into a temporary prefix, then build and run
# examples/cmake_consumer against it (examples/cmake_consumer_test.sh; nothing is rebuilt).
fpconform_test_run(NAME cmake_consumer_test
  COMMAND bash "${PROJECT_SOURCE_DIR}/examples/cmake_consumer_test.sh"
          "${PROJECT_BINARY_DIR}" "${PROJECT_SOURCE_DIR}" "${CMAKE_COMMAND}"
          "${CMAKE_CTEST_COMMAND}"
          "${CMAKE_GENERATOR}"
  LABELS oracle TIMEOUT 300)
