# accel bench fp8: runs accel-worker per precision, reads the metrics (accel_monitor), draws the
# loss curves with Qt Gui on an offscreen QImage.
find_package(Qt6 QUIET COMPONENTS Gui)
if(TARGET Qt6::Gui AND TARGET accel_monitor)
  list(APPEND ACCEL_CLI_SOURCES cli/cmd_bench.cpp cli/cmd_bench_plot.h cli/cmd_bench_plot.cpp
       cli/cmd_bench_summary.h cli/cmd_bench_summary.cpp)
  list(APPEND ACCEL_CLI_LIBS accel_monitor Qt6::Gui)
  set_source_files_properties(cli/cmd_bench.cpp PROPERTIES COMPILE_DEFINITIONS ACCEL_BENCH_SOURCE_ROOT="${CMAKE_SOURCE_DIR}")
endif()
