# Install rules, all of them (included once, last, by the top-level CMakeLists.txt). Four components,
# packaged by packaging/package.sh (docs/packaging.md):
#   cli       accel, the demo job, its corpus and the Python tracker (share/accel-studio)  -> accel
#   studio    accel-studio, its desktop entry, icon and AppStream metainfo                 -> accel-studio
#   worker    accel-worker and libaccel_runtime.so (private: <libdir>/accel-studio)        -> accel-worker
#   libtorch  the libraries of the libtorch accel-worker was built against that it loads   -> accel-worker
#             without CUDA (libtorch_cpu, libc10 and what they need), in the same folder
#   cuda      libaccel_runtime_cuda.so (the runtime's CUDA plugin) and every other library  -> accel-worker-cuda
#             of the wheel and of NVIDIA's folders beside it (libtorch_cuda, NCCL, cuDNN, ...)
# `cmake --install build --prefix DIR [--component NAME] [--strip]` gives the tree the packages carry.
# The programs find what they need relative to themselves (accel-worker beside accel, the demo job in
# ../share/accel-studio, libraries through an $ORIGIN RPATH), so an install under any prefix runs
# (accel hosts install puts one under ~/.local).
include(GNUInstallDirs)

# The one name of the private folder; accel-worker's RPATH points there from the bin folder.
set(ACCEL_INSTALL_PRIVATE_LIBDIR "${CMAKE_INSTALL_LIBDIR}/accel-studio")
set(ACCEL_INSTALL_DATADIR "${CMAKE_INSTALL_DATADIR}/accel-studio")
file(RELATIVE_PATH accel_bin_to_private "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${ACCEL_INSTALL_PRIVATE_LIBDIR}")
# Debian's rule for shared libraries: not executable.
set(accel_library_permissions OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

install(TARGETS accel RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(FILES ${CMAKE_SOURCE_DIR}/resources/jobs/demo-gpt.yaml ${CMAKE_SOURCE_DIR}/resources/jobs/selftest.yaml
              ${CMAKE_SOURCE_DIR}/resources/jobs/finetune-full.yaml ${CMAKE_SOURCE_DIR}/resources/jobs/finetune-lora.yaml
        DESTINATION ${ACCEL_INSTALL_DATADIR}/jobs COMPONENT cli)
install(FILES ${CMAKE_SOURCE_DIR}/resources/corpus/corpus.txt DESTINATION ${ACCEL_INSTALL_DATADIR}/corpus COMPONENT cli)
install(FILES ${CMAKE_SOURCE_DIR}/resources/python/accel_studio_tracker.py DESTINATION ${ACCEL_INSTALL_DATADIR}/python
        COMPONENT cli)

if(TARGET accel-studio)
  install(TARGETS accel-studio RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT studio)
  install(FILES ${CMAKE_SOURCE_DIR}/resources/desktop/accel-studio.desktop
          DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT studio)
  install(FILES ${CMAKE_SOURCE_DIR}/resources/icons/accel-studio.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps COMPONENT studio)
  # The release it describes is this project's version.
  configure_file(${CMAKE_SOURCE_DIR}/resources/desktop/accel-studio.metainfo.xml.in
                 ${CMAKE_BINARY_DIR}/generated/accel-studio.metainfo.xml @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/generated/accel-studio.metainfo.xml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo COMPONENT studio)
endif()

if(TARGET accel-worker)
  # Installed as files, not as targets: the build links them with DT_RPATH entries into the build
  # folder and the Python environment (AccelDependencies.cmake), partly through linker options, which
  # CMake's own install-time RPATH rewrite does not expect (it stops with "does not contain ... as was
  # expected"). Installed, each looks only in the private folder: a DT_RPATH (not RUNPATH), which the
  # loader applies to libtorch's own dependencies too, so the CUDA libraries carried there are found
  # before any on the system. Stripped under `cmake --install --strip`, as targets would be.
  install(PROGRAMS $<TARGET_FILE:accel-worker> DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT worker)
  install(FILES $<TARGET_FILE:accel_runtime> DESTINATION ${ACCEL_INSTALL_PRIVATE_LIBDIR} COMPONENT worker
          PERMISSIONS ${accel_library_permissions})
  set(accel_own_files "${CMAKE_INSTALL_BINDIR}/accel-worker=$ORIGIN/${accel_bin_to_private}=worker"
                      "${ACCEL_INSTALL_PRIVATE_LIBDIR}/$<TARGET_FILE_NAME:accel_runtime>=$ORIGIN=worker")
  if(TARGET accel_runtime_cuda)
    # The runtime opens it from its own folder when present (core/runtime/cudaplugin.h).
    install(FILES $<TARGET_FILE:accel_runtime_cuda> DESTINATION ${ACCEL_INSTALL_PRIVATE_LIBDIR} COMPONENT cuda
            PERMISSIONS ${accel_library_permissions})
    list(APPEND accel_own_files "${ACCEL_INSTALL_PRIVATE_LIBDIR}/$<TARGET_FILE_NAME:accel_runtime_cuda>=$ORIGIN=cuda")
  endif()
  foreach(installed ${accel_own_files})
    string(REPLACE "=" ";" triple "${installed}")
    list(GET triple 0 file)
    list(GET triple 1 rpath)
    list(GET triple 2 component)
    install(CODE "
      set(installed \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${file}\")
      file(RPATH_SET FILE \"\${installed}\" NEW_RPATH \"${rpath}\")
      if(CMAKE_INSTALL_DO_STRIP)
        execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-unneeded \"\${installed}\" COMMAND_ERROR_IS_FATAL ANY)
      endif()" COMPONENT ${component})
  endforeach()

  # libtorch: every shared library of the wheel's torch/lib except the Python bindings, and of the
  # NVIDIA folders its RUNPATH names (cuDNN, cuBLAS, NCCL, ...; libtorch and cuDNN open some of them
  # with dlopen, so the NEEDED closure alone is not enough on a GPU). Static archives stay behind.
  get_filename_component(accel_torch_lib "${Torch_DIR}/../../../lib" ABSOLUTE)
  file(GLOB accel_torch_libraries "${accel_torch_lib}/*.so" "${accel_torch_lib}/*.so.*")
  list(FILTER accel_torch_libraries EXCLUDE REGEX "/lib(torch_python|shm|torch_global_deps)\\.so$")
  file(GLOB accel_cuda_libraries "${accel_torch_lib}/../../nvidia/*/lib/*.so" "${accel_torch_lib}/../../nvidia/*/lib/*.so.*")
  # Which of them accel-worker loads without the CUDA plugin: the NEEDED closure (read with readelf here,
  # not listed by hand) of what accel_torch links, libtorch_cpu.so and libc10.so (AccelDependencies.cmake).
  # With the CUDA wheel it takes libcudart and libcupti along, which libtorch_cpu.so NEEDs; they load
  # without a GPU or driver.
  set(accel_carried_paths ${accel_torch_libraries} ${accel_cuda_libraries})
  set(accel_cpu_libraries "")
  set(todo libtorch_cpu.so libc10.so)
  while(todo)
    list(POP_FRONT todo name)
    set(path "")
    foreach(candidate ${accel_carried_paths})
      get_filename_component(candidate_name "${candidate}" NAME)
      if(candidate_name STREQUAL name)
        set(path "${candidate}")
      endif()
    endforeach()
    if(NOT path OR path IN_LIST accel_cpu_libraries)
      continue()
    endif()
    list(APPEND accel_cpu_libraries "${path}")
    execute_process(COMMAND ${CMAKE_READELF} -d "${path}" OUTPUT_VARIABLE dynamic COMMAND_ERROR_IS_FATAL ANY)
    string(REGEX MATCHALL "\\(NEEDED\\)[ \t]+Shared library: \\[[^]\n]+" needed "${dynamic}")
    # (The names without their "[": an open bracket in a list element would keep CMake from splitting the list.)
    string(REGEX REPLACE "\\(NEEDED\\)[ \t]+Shared library: \\[" "" needed "${needed}")
    list(APPEND todo ${needed})
  endwhile()
  set(accel_gpu_libraries ${accel_carried_paths})
  list(REMOVE_ITEM accel_gpu_libraries ${accel_cpu_libraries})
  install(FILES ${accel_cpu_libraries} DESTINATION ${ACCEL_INSTALL_PRIVATE_LIBDIR} COMPONENT libtorch
          PERMISSIONS ${accel_library_permissions})
  if(accel_gpu_libraries)
    install(FILES ${accel_gpu_libraries} DESTINATION ${ACCEL_INSTALL_PRIVATE_LIBDIR} COMPONENT cuda
            PERMISSIONS ${accel_library_permissions})
  endif()
  # Carried in one folder, each library looks beside itself only: the wheel's search paths name its
  # folders relative to it ($ORIGIN/../../nvidia/...), and two NVSHMEM plugins a folder of NVIDIA's build
  # machine (/data/tmp/openmpi_install/lib). Under --strip their symbol tables go, as Debian strips
  # libraries (the dynamic symbols stay).
  foreach(component libtorch cuda)
    set(accel_carried "")
    set(paths ${accel_cpu_libraries})
    if(component STREQUAL "cuda")
      set(paths ${accel_gpu_libraries})
    endif()
    foreach(library ${paths})
      get_filename_component(name "${library}" NAME)
      list(APPEND accel_carried "${name}")
    endforeach()
    install(CODE "
      foreach(name ${accel_carried})
        set(installed \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${ACCEL_INSTALL_PRIVATE_LIBDIR}/\${name}\")
        unset(rpath)
        unset(runpath)
        unset(not_elf)
        file(READ_ELF \"\${installed}\" RPATH rpath RUNPATH runpath CAPTURE_ERROR not_elf)
        if(NOT not_elf AND (rpath OR runpath))
          file(RPATH_SET FILE \"\${installed}\" NEW_RPATH \"$ORIGIN\")
        endif()
        if(CMAKE_INSTALL_DO_STRIP AND NOT not_elf)
          execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-unneeded \"\${installed}\" COMMAND_ERROR_IS_FATAL ANY)
        endif()
      endforeach()" COMPONENT ${component})
  endforeach()
endif()
