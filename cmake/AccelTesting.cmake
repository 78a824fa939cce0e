# accel_add_test(NAME tst_x SOURCES a.cpp ... LIBS lib ... LABELS unit [process torch gui ssh slow bench]
#                [TIMEOUT s] [RANKS] [ARGS ...])
# RANKS: the test runs several rank processes at once (real multi-process jobs). It holds the lock
# `accel_ranks`, so that two such suites never run at the same time on a small machine (two 4-rank
# jobs on 2 cores time each other out), and starts before the single-process tests (COST), which
# fill the other cores meanwhile. It counts as one processor for ctest -j: its ranks mostly wait on
# each other, on Python's start or on the network. Alone on a 2-core EPYC without AVX-512, twelve of
# the longest kept 0.64 to 1.79 cores busy, 1.3 on average; counted as one processor per rank they
# ran with nothing beside them, one after another (about 990 s of a 1290-1405 s suite there).
# Builds one Qt Test executable and registers it with CTest. Every test runs on the offscreen
# platform with a private HOME/XDG tree so that no test reads or writes the user's files.
# ACCEL_PYTHON (the project's Python environment's interpreter, cmake/AccelDependencies.cmake) is in every
# test's environment: the compat tests start it as the oracle (the real Hugging Face packages) and skip
# when it is missing.
#
# With ACCEL_SANITIZE set, every test and every program it starts (accel, accel-worker, fakechild:
# they inherit the environment) also get the sanitizers' options below and the committed
# suppressions in tests/sanitizers (packaging/sanitize.sh runs the suite that way). Reports go to
# <build>/sanitizer-reports/report.<pid>, not to stderr, so that one from a child whose output a
# test discards (a rank log in a temporary folder) is kept too; a report still fails the process
# (exit 1). Python started by a test (the oracle, training scripts) is not instrumented; the options
# do nothing there.
set(ACCEL_SANITIZER_TEST_ENV "")
if(ACCEL_SANITIZE)
  set(accel_suppressions ${CMAKE_SOURCE_DIR}/tests/sanitizers)
  set(accel_reports ${CMAKE_BINARY_DIR}/sanitizer-reports)
  file(MAKE_DIRECTORY ${accel_reports})
  set(ACCEL_SANITIZER_TEST_ENV
    "ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1:log_path=${accel_reports}/report"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=${accel_suppressions}/ubsan.supp:log_path=${accel_reports}/report"
    "LSAN_OPTIONS=suppressions=${accel_suppressions}/lsan.supp:print_suppressions=0"
    # die_after_fork=0: QProcess starts programs through clone(CLONE_VM | CLONE_VFORK), which TSan does
    # not intercept; its child shares the parent's memory and runs intercepted calls until execve, and
    # TSan's default then ends it ("starting new threads after multi-threaded fork"), so a test that
    # starts a program after making a thread (tst_sshhost: ssh-keygen beside an SSH worker) died.
    "TSAN_OPTIONS=second_deadlock_stack=1:die_after_fork=0:log_path=${accel_reports}/report")
endif()

# Qt's headers are most of a test unit's compile time (tst_validation: 10.1 s, 4.6 s with them
# precompiled, on a 2-core EPYC without AVX-512). Every test program compiles with one precompiled
# header of Qt Test, Network and Widgets, made for accel_testsupport (tests/helpers), except the
# programs that compile against libtorch, which take libtorch's (accel_torch_pch). GCC takes the
# header only where the Qt macros it was made with are defined alike, so every test links the same
# Qt modules (ACCEL_TEST_QT_LIBS, through accel_testsupport), and Qt Test's two per-folder macros
# are dropped (QT_TESTCASE_BUILDDIR and QT_TESTCASE_SOURCEDIR; they serve QFINDTESTDATA, which no
# test uses; tests find their data with accel::test::dataPath).
#
# The units that take that Qt header compile at -O1 (ACCEL_TEST_CODE_OPT), the header too: GCC wants
# a header made under the unit's own -O level (a -O2 unit with the -O1 header: an internal compiler
# error). What these tests and benchmarks run and time is the programs and libraries, which keep the
# build type's -O2; their own code compiles faster (on a 2-core EPYC without AVX-512, the 145 units
# 941 -> 793 CPU-s at -j2; tst_slurm by hand 9.4-10.4 s -> 5.9-7.3). The libtorch tests keep -O2,
# the level of libtorch's header, which is the product's.
set(ACCEL_TEST_CODE_OPT "")
if(CMAKE_BUILD_TYPE MATCHES "^(RelWithDebInfo|Release)$")
  set(ACCEL_TEST_CODE_OPT -O1)
endif()
set(ACCEL_TEST_QT_LIBS Qt6::Core Qt6::Test Qt6::Network)
set(ACCEL_TEST_QT_HEADERS <QtTest/QtTest> <QtNetwork/QtNetwork>)
if(ACCEL_BUILD_GUI)
  list(APPEND ACCEL_TEST_QT_LIBS Qt6::Widgets)
  list(APPEND ACCEL_TEST_QT_HEADERS <QtWidgets/QtWidgets>)
endif()
set_property(TARGET Qt6::Test PROPERTY INTERFACE_COMPILE_DEFINITIONS QT_TESTLIB_LIB)

# Run at the end of the folder that defined the test, when accel_torch_pch may have given it
# libtorch's header instead.
function(accel_test_pch target)
  get_target_property(reused ${target} PRECOMPILE_HEADERS_REUSE_FROM)
  if(NOT reused)
    accel_pch_options(${target})
    target_compile_options(${target} PRIVATE ${ACCEL_TEST_CODE_OPT})
    target_precompile_headers(${target} REUSE_FROM accel_testsupport)
  endif()
endfunction()

function(accel_add_test)
  cmake_parse_arguments(T "RANKS" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE accel_defaults accel_testsupport ${T_LIBS}) # Qt: ACCEL_TEST_QT_LIBS
  set_target_properties(${T_NAME} PROPERTIES AUTOMOC ON RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} ${T_ARGS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(ACCEL_SANITIZE)
    # Instrumented code runs several times slower (tst_launchcompat: 272 s alone under ASan, over
    # its 300 s beside other work); ctest's --timeout does not override a test's own TIMEOUT.
    math(EXPR T_TIMEOUT "${T_TIMEOUT} * 3")
  endif()
  set(home ${CMAKE_BINARY_DIR}/test-home/${T_NAME})
  set(env "QT_QPA_PLATFORM=offscreen;HOME=${home};XDG_CACHE_HOME=${home}/.cache;XDG_CONFIG_HOME=${home}/.config;XDG_DATA_HOME=${home}/.local/share;HF_HOME=;ACCEL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;ACCEL_SOURCE_DIR=${CMAKE_SOURCE_DIR};ACCEL_PYTHON=${ACCEL_PYTHON};OMP_NUM_THREADS=1")
  list(APPEND env ${ACCEL_SANITIZER_TEST_ENV})
  set_tests_properties(${T_NAME} PROPERTIES
    LABELS "${T_LABELS}"
    TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "${env}")
  if(T_RANKS)
    # ctest -j starts tests in decreasing cost (a test's seconds, once measured; none in a new build
    # folder, as in CI): this is above any test's, so these start first.
    set_tests_properties(${T_NAME} PROPERTIES RESOURCE_LOCK accel_ranks COST 10000)
  endif()
  set_property(GLOBAL APPEND PROPERTY ACCEL_TESTS ${T_NAME})
  cmake_language(EVAL CODE "cmake_language(DEFER CALL accel_test_pch [[${T_NAME}]])")
endfunction()
