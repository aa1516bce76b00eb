# fpconform_add_audit: a ctest test that runs `fpconform audit` on a kernel's dumped tensors.
# Included by fpconformConfig.cmake (after find_package(fpconform)) and by the fpconform tree.
#
#   fpconform_add_audit(NAME <name> OP matmul A <a> B <b> OUT <out> [C <c>]
#                       [PLATFORM <p>] [STRICT] [EXPECT_FAIL] [LABELS <l>...] [TIMEOUT <s>]
#                       [ARGS <extra fpconform audit arguments>...])
#   fpconform_add_audit(NAME <name> OP sum X <x> [AXIS <axis>] OUT <out> ...)
#
#   A, B, C, X, OUT  tensor files (.npy, .safetensors[:NAME], raw .bin with --a-shape ... in
#                    ARGS); relative paths are relative to CMAKE_CURRENT_SOURCE_DIR.
#   PLATFORM         a model, comma list or envelope (`fpconform models`); default auto.
#   STRICT           --strict: elements only within the recommended tolerance fail too.
#   ARGS             passed on as they are, e.g. ARGS --a-dtype bfloat16 --b-dtype bfloat16
#                    --cast-inputs rne --no-tolerance --threads 2.
#   EXPECT_FAIL      the test passes only when the audit's verdict is fail (exit status 1); an
#                    error (exit 2: unreadable file, bad option) still fails the test, which
#                    ctest's WILL_FAIL alone would not tell apart.
#
# The test passes on exit status 0 (audit pass); 1 (an unexplained element) and 2 (bad input)
# fail it. Every run leaves, in the build tree,
#   ${CMAKE_CURRENT_BINARY_DIR}/fpconform-audit/<name>/       report.md, elements.csv,
#                                                             report.json, report.html
#   ${CMAKE_CURRENT_BINARY_DIR}/fpconform-audit/<name>.json   the --json document
# (the report directory is replaced atomically by fpconform on each run; nothing else writes
# there). The CLI used: ${FPCONFORM_EXECUTABLE} when set, else the target fpconform::cli (the
# installed bin/fpconform, or the tree's own build).
include_guard(GLOBAL)
set_property(GLOBAL PROPERTY FPCONFORM_AUDIT_EXPECT_SCRIPT
             "${CMAKE_CURRENT_LIST_DIR}/fpconformAuditExpect.cmake")

function(fpconform_add_audit)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "STRICT;EXPECT_FAIL"
                        "NAME;OP;A;B;C;X;AXIS;OUT;PLATFORM;TIMEOUT" "LABELS;ARGS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "fpconform_add_audit: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_NAME)
    message(FATAL_ERROR "fpconform_add_audit: NAME is required")
  endif()
  if(NOT ARG_NAME MATCHES "^[A-Za-z0-9_.+-]+$")
    message(FATAL_ERROR "fpconform_add_audit(${ARG_NAME}): NAME may hold only letters, digits "
                        "and _ . + - (it names a directory)")
  endif()
  set(where "fpconform_add_audit(${ARG_NAME})")
  if(NOT ARG_OUT)
    message(FATAL_ERROR "${where}: OUT is required")
  endif()
  if(ARG_OP STREQUAL "matmul")
    if(NOT ARG_A OR NOT ARG_B)
      message(FATAL_ERROR "${where}: OP matmul needs A and B")
    endif()
    if(ARG_X OR DEFINED ARG_AXIS)
      message(FATAL_ERROR "${where}: X and AXIS are for OP sum")
    endif()
  elseif(ARG_OP STREQUAL "sum")
    if(NOT ARG_X)
      message(FATAL_ERROR "${where}: OP sum needs X")
    endif()
    if(ARG_A OR ARG_B OR ARG_C)
      message(FATAL_ERROR "${where}: A, B and C are for OP matmul")
    endif()
  else()
    message(FATAL_ERROR "${where}: OP must be matmul or sum, got '${ARG_OP}' "
                        "(other audits: pass the whole command with add_test)")
  endif()

  if(FPCONFORM_EXECUTABLE)
    set(exe "${FPCONFORM_EXECUTABLE}")
  elseif(TARGET fpconform::cli)
    set(exe "$<TARGET_FILE:fpconform::cli>")
  elseif(TARGET fpconform OR DEFINED fpconform_SOURCE_DIR)
    # In the fpconform tree (include(fpconformAudit)), also before cli/ is added: the generator
    # expression is resolved once every target exists.
    set(exe "$<TARGET_FILE:fpconform>")
  else()
    message(FATAL_ERROR "${where}: no fpconform CLI: find_package(fpconform) first, or set "
                        "FPCONFORM_EXECUTABLE")
  endif()

  set(cmd "${exe}" audit ${ARG_OP})
  foreach(opt A B C X OUT)
    if(ARG_${opt})
      get_filename_component(path "${ARG_${opt}}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      string(TOLOWER "${opt}" flag)
      list(APPEND cmd "--${flag}" "${path}")
    endif()
  endforeach()
  if(DEFINED ARG_AXIS)
    list(APPEND cmd --axis "${ARG_AXIS}")
  endif()
  if(NOT ARG_PLATFORM)
    set(ARG_PLATFORM auto)
  endif()
  list(APPEND cmd --platform "${ARG_PLATFORM}")
  if(ARG_STRICT)
    list(APPEND cmd --strict)
  endif()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/fpconform-audit")
  file(MAKE_DIRECTORY "${dir}")
  list(APPEND cmd --report "${dir}/${ARG_NAME}" --json "${dir}/${ARG_NAME}.json"
                  --progress never ${ARG_ARGS})

  if(ARG_EXPECT_FAIL)
    get_property(expect GLOBAL PROPERTY FPCONFORM_AUDIT_EXPECT_SCRIPT)
    add_test(NAME ${ARG_NAME} COMMAND "${CMAKE_COMMAND}" -P "${expect}" -- ${cmd})
  else()
    add_test(NAME ${ARG_NAME} COMMAND ${cmd})
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  if(ARG_LABELS)
    set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}")
  endif()
endfunction()
