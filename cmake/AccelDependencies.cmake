# Finds every external dependency once. Optional capabilities (GUI, torch, CUDA) are switched off
# with a message instead of failing the build; the programs explain what is missing.
find_package(Threads REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(tl-expected REQUIRED)
find_package(Qt6 6.4 REQUIRED COMPONENTS Core Network Test)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBSSH REQUIRED IMPORTED_TARGET libssh)

set(ACCEL_HAVE_GUI_INT 0)
if(ACCEL_BUILD_GUI)
  # QCustomPlotQt6 links Qt6::PrintSupport, so that target must exist before it is used.
  find_package(Qt6 6.4 COMPONENTS Widgets Concurrent Svg PrintSupport)
  find_package(QCustomPlotQt6)
  if(Qt6Widgets_FOUND AND Qt6Concurrent_FOUND AND Qt6PrintSupport_FOUND AND QCustomPlotQt6_FOUND)
    set(ACCEL_HAVE_GUI_INT 1)
  else()
    message(WARNING "Qt6 Widgets/Concurrent or QCustomPlotQt6 not found: accel-studio is not built")
    set(ACCEL_BUILD_GUI OFF)
  endif()
endif()

# accel_pch_options(<target>): what a target that compiles with a precompiled header needs. GCC
# takes a precompiled header only under the -fPIC setting it was made with, where every macro defined
# when it was made is defined alike, and where no macro its headers test is defined that was not
# then. With -Winvalid-pch and -Werror a mismatch fails the build instead of silently parsing the
# headers again. AUTOMOC's mocs_compilation.cpp (empty for a program whose .cpp includes its own
# .moc) is compiled without the header: with it, each costs seconds of loading it.
function(accel_pch_options target)
  target_compile_options(${target} PRIVATE -fPIC)
  set_source_files_properties(${CMAKE_CURRENT_BINARY_DIR}/${target}_autogen/mocs_compilation.cpp
    PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  if(ACCEL_CCACHE)
    target_compile_options(${target} PRIVATE -fpch-preprocess) # ccache caches units that use the header
  endif()
endfunction()

# accel_unity(<target> [SEPARATE src...]) compiles the target's units in batches of six, each batch
# one unit (CMake's unity build), except the SEPARATE ones: the hand-written kernels, whose code must
# not change with what else a batch holds, and files whose file-local helpers share a name. A batch
# reads its headers once: libtorch's templates, which GCC instantiates again in every unit even from
# a precompiled header (about 10 s of an empty unit's compile on a 2-core EPYC), and Qt's headers,
# parsed again in every unit. The price: a change to one file recompiles its batch (a libtorch batch
# about 40 s there, against about 25 s for the file alone).
function(accel_unity target)
  cmake_parse_arguments(U "" "" "SEPARATE" ${ARGN})
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 6)
  if(U_SEPARATE)
    set_source_files_properties(${U_SEPARATE} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()

set(ACCEL_HAVE_TORCH_INT 0)
set(ACCEL_HAVE_CUDA_INT 0)
set(ACCEL_TORCH_VERSION "")
set(ACCEL_NCCL_VERSION "")
# The project's Python environment (packaging/install-deps.sh): PyTorch 2.x's wheel, whose libtorch the runtime
# links, and the real Hugging Face packages the compat tests and the benchmarks' peers use.
set(ACCEL_PYTHON_ENV "${CMAKE_SOURCE_DIR}/.venv" CACHE PATH "The project's Python environment (install-deps.sh)")
set(ACCEL_PYTHON "${ACCEL_PYTHON_ENV}/bin/python")
if(ACCEL_BUILD_TORCH)
  if(EXISTS "${ACCEL_PYTHON}")
    execute_process(COMMAND "${ACCEL_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                    OUTPUT_VARIABLE torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE torch_rc ERROR_QUIET)
    if(torch_rc EQUAL 0)
      # FORCE: a build folder configured before against another libtorch (Debian's 1.13) follows the
      # environment; libraries that config cached elsewhere are looked up again.
      set(Torch_DIR "${torch_prefix}/Torch" CACHE PATH "libtorch's CMake config" FORCE)
      set(Caffe2_DIR "${torch_prefix}/Caffe2" CACHE PATH "libtorch's CMake config" FORCE)
      get_filename_component(torch_root "${torch_prefix}/../.." ABSOLUTE)
      foreach(cached TORCH_LIBRARY c10_LIBRARY c10_cuda_LIBRARY kineto_LIBRARY)
        if(DEFINED CACHE{${cached}} AND NOT "$CACHE{${cached}}" MATCHES "^${torch_root}")
          unset(${cached} CACHE)
        endif()
      endforeach()
      # TorchConfig searches the system before its own folder: pin the wheel's libraries.
      set(TORCH_LIBRARY "${torch_root}/lib/libtorch.so" CACHE FILEPATH "libtorch" FORCE)
      set(c10_LIBRARY "${torch_root}/lib/libc10.so" CACHE FILEPATH "c10" FORCE)
    endif()
  endif()
  # The wheel's libtorch is built with CUDA. Its CMake config looks for the CUDA toolkit (nvcc, cuBLAS, NCCL);
  # where that is found, the CUDA paths (NCCL process group, CUDA autocast) compile in.
  find_package(Torch 2.0 QUIET)
  if(Torch_FOUND)
    set(ACCEL_HAVE_TORCH_INT 1)
    if(TORCH_VERSION)
      set(ACCEL_TORCH_VERSION ${TORCH_VERSION})
    elseif(Torch_VERSION)
      set(ACCEL_TORCH_VERSION ${Torch_VERSION})
    endif()
    if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA)
      set(ACCEL_HAVE_CUDA_INT 1)
      # NCCL's version from the header the NCCL process group compiles against.
      find_file(ACCEL_NCCL_HEADER nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
      if(ACCEL_NCCL_HEADER)
        file(STRINGS "${ACCEL_NCCL_HEADER}" nccl_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
        string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
               ACCEL_NCCL_VERSION "${nccl_lines}")
      endif()
    endif()
    # c10d's ProcessGroupGloo.hpp includes gloo's headers, which the wheel does not ship; gloo itself is compiled
    # into libtorch_cpu. Debian's libgloo-dev provides the headers only (never link its library: its symbols
    # would clash with libtorch's). See docs/platform.md, "gloo headers".
    find_path(ACCEL_GLOO_INCLUDE_DIR gloo/rendezvous/store.h REQUIRED)
    # One target for everything that compiles against libtorch: headers as SYSTEM (their warnings
    # are not ours), c10d with gloo switched on.
    # The include folders (libtorch's, gloo's and, where torch_cuda is there, CUDA's runtime headers)
    # go to the compiler as options, not as include directories: AUTOMOC hands a target's include
    # directories to moc, whose preprocessor then opens every libtorch header a Qt test includes
    # (about 5,000 files, 4 to 25 s per test program) for the same output. The libraries linked
    # below (c10, torch_cpu) name libtorch's folder as a usage requirement, which would hand it to
    # moc again: it is taken off them. (The compiler's own folders, /usr/include where gloo's headers
    # are, stay out: -isystem on them breaks libstdc++'s #include_next.)
    add_library(accel_torch INTERFACE)
    set(accel_torch_include_dirs ${TORCH_INCLUDE_DIRS} ${ACCEL_GLOO_INCLUDE_DIR})
    if(TARGET torch_cuda)
      list(APPEND accel_torch_include_dirs ${CUDAToolkit_INCLUDE_DIRS})
    endif()
    list(REMOVE_DUPLICATES accel_torch_include_dirs)
    foreach(dir ${accel_torch_include_dirs})
      if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
        target_compile_options(accel_torch INTERFACE "SHELL:-isystem ${dir}")
      endif()
    endforeach()
    foreach(library c10 torch_cpu)
      if(TARGET ${library})
        set_property(TARGET ${library} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "")
      endif()
    endforeach()
    # libtorch's CPU libraries only (libtorch_cpu, libc10): libtorch.so is a stub that NEEDs libtorch_cuda.so,
    # and TorchConfig links libtorch_cuda with --no-as-needed. What uses CUDA links accel_torch_cuda and lives in
    # libaccel_runtime_cuda.so (core/runtime/cuda), which the runtime opens when present, so one build gives
    # an accel-worker that runs where only the CPU libraries are installed (docs/packaging.md). The compile
    # definitions stay those of the whole libtorch (torch_cuda's too) so both sides compile libtorch's
    # headers alike and share one precompiled header.
    target_link_libraries(accel_torch INTERFACE torch_cpu_library c10)
    if(TARGET torch_cuda)
      target_compile_definitions(accel_torch INTERFACE $<TARGET_PROPERTY:torch_cuda,INTERFACE_COMPILE_DEFINITIONS>)
    endif()
    add_library(accel_torch_cuda INTERFACE)
    target_link_libraries(accel_torch_cuda INTERFACE accel_torch ${TORCH_LIBRARIES})
    # The wheel's CUDA libraries (NCCL, cuDNN, cuBLAS, ...) live beside it in nvidia/*/lib, and
    # libtorch_cuda.so carries no search path for them (Python preloads them). Programs that link
    # libtorch get an old-style DT_RPATH with those folders, which the loader also applies to the
    # libraries' own dependencies (a DT_RUNPATH would not), so the wheel's NCCL is found rather than
    # the toolkit's older one, at link time and at run time.
    get_filename_component(torch_root "${Torch_DIR}/../../.." ABSOLUTE)
    file(GLOB accel_wheel_lib_dirs LIST_DIRECTORIES true "${torch_root}/../nvidia/*/lib")
    target_link_options(accel_torch INTERFACE "LINKER:--disable-new-dtags")
    foreach(dir "${torch_root}/lib" ${accel_wheel_lib_dirs})
      target_link_options(accel_torch INTERFACE "LINKER:-rpath,${dir}")
    endforeach()
    target_compile_definitions(accel_torch INTERFACE USE_DISTRIBUTED USE_C10D_GLOO
      $<$<BOOL:${ACCEL_HAVE_CUDA_INT}>:USE_C10D_NCCL ACCEL_WITH_CUDA>)
    # libtorch's umbrella header costs about 70 s of compiling in every file that includes it, and
    # about 60 files do. It is precompiled once, for accel_inference (the first libtorch target
    # defined), and every other target that compiles against libtorch reuses that header:
    # accel_torch_pch(<target>).
    function(accel_torch_pch target)
      accel_pch_options(${target})
      if(target STREQUAL "accel_inference")
        target_precompile_headers(accel_inference PRIVATE <torch/torch.h>)
      else()
        target_precompile_headers(${target} REUSE_FROM accel_inference)
      endif()
    endfunction()
    message(STATUS "libtorch ${ACCEL_TORCH_VERSION} from ${torch_prefix} (CUDA compiled in: ${ACCEL_HAVE_CUDA_INT}, NCCL ${ACCEL_NCCL_VERSION})")
  else()
    message(WARNING "libtorch 2.x not found in ${ACCEL_PYTHON_ENV} (run packaging/install-deps.sh): accel-worker and the runtime are not built")
    set(ACCEL_BUILD_TORCH OFF)
  endif()
endif()
