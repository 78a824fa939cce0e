# Install rules, all of them (included once, last, by the top-level CMakeLists.txt). Four components,
# one per Debian package that packaging/package.sh writes (docs/packaging.md):
#   cli       accel, the demo job, its corpus and the Python tracker (share/accel-studio)
#   studio    accel-studio, its desktop entry, icon and AppStream metainfo
#   worker    accel-worker and libaccel_runtime.so (private: <libdir>/accel-studio)
#   libtorch  the libtorch accel-worker was built against: the wheel's libraries and NVIDIA's CUDA
#             libraries beside it, in the same private folder
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
  foreach(installed "${CMAKE_INSTALL_BINDIR}/accel-worker=$ORIGIN/${accel_bin_to_private}"
                    "${ACCEL_INSTALL_PRIVATE_LIBDIR}/$<TARGET_FILE_NAME:accel_runtime>=$ORIGIN")
    string(REPLACE "=" ";" pair "${installed}")
    list(GET pair 0 file)
    list(GET pair 1 rpath)
    install(CODE "
      set(installed \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${file}\")
      file(RPATH_SET FILE \"\${installed}\" NEW_RPATH \"${rpath}\")
      if(CMAKE_INSTALL_DO_STRIP)
        execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-unneeded \"\${installed}\" COMMAND_ERROR_IS_FATAL ANY)
      endif()" COMPONENT worker)
  endforeach()

  # libtorch: every shared library of the wheel's torch/lib except the Python bindings, and of the
  # NVIDIA folders its RUNPATH names (cuDNN, cuBLAS, NCCL, ...; libtorch and cuDNN open some of them
  # with dlopen, so the NEEDED closure alone is not enough on a GPU). Static archives stay behind.
  get_filename_component(accel_torch_lib "${Torch_DIR}/../../../lib" ABSOLUTE)
  file(GLOB accel_torch_libraries "${accel_torch_lib}/*.so" "${accel_torch_lib}/*.so.*")
  list(FILTER accel_torch_libraries EXCLUDE REGEX "/lib(torch_python|shm|torch_global_deps)\\.so$")
  file(GLOB accel_cuda_libraries "${accel_torch_lib}/../../nvidia/*/lib/*.so" "${accel_torch_lib}/../../nvidia/*/lib/*.so.*")
  install(FILES ${accel_torch_libraries} ${accel_cuda_libraries} DESTINATION ${ACCEL_INSTALL_PRIVATE_LIBDIR}
          COMPONENT libtorch PERMISSIONS ${accel_library_permissions})
  # Carried in one folder, each library looks beside itself only: the wheel's search paths name its
  # folders relative to it ($ORIGIN/../../nvidia/...), and two NVSHMEM plugins a folder of NVIDIA's build
  # machine (/data/tmp/openmpi_install/lib). Under --strip their symbol tables go, as Debian strips
  # libraries (the dynamic symbols stay).
  set(accel_carried "")
  foreach(library ${accel_torch_libraries} ${accel_cuda_libraries})
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
    endforeach()" COMPONENT libtorch)
endif()
