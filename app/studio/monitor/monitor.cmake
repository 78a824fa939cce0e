# The Runs and Monitor pages of accel-studio (included by app/studio/CMakeLists.txt).
target_sources(accel_studio_ui PRIVATE
  monitor/qcustomplotinclude.h
  monitor/metricplot.h monitor/metricplot.cpp
  monitor/bannerbar.h monitor/bannerbar.cpp
  monitor/logview.h monitor/logview.cpp
  monitor/eventstimeline.h monitor/eventstimeline.cpp
  monitor/monitorpage.h monitor/monitorpage.cpp
  monitor/runspage.h monitor/runspage.cpp
)
target_link_libraries(accel_studio_ui PUBLIC accel_monitor accel_launcher QCustomPlotQt6::QCustomPlotQt6)
