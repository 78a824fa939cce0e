# The Runs and Monitor pages of accel-studio (included by app/studio/CMakeLists.txt).
target_sources(accel_studio_ui PRIVATE
  monitor/qcustomplotinclude.h
  monitor/axisunits.h monitor/axisunits.cpp
  monitor/plotcurves.h monitor/plotcurves.cpp
  monitor/chartseries.h monitor/chartseries.cpp
  monitor/metricplot.h monitor/metricplot.cpp monitor/metricplotpointer.cpp
  monitor/metricpanels.h monitor/metricpanels.cpp
  monitor/panellayout.h monitor/panellayout.cpp
  monitor/panelgrid.h monitor/panelgrid.cpp
  monitor/stdoutoffer.h monitor/stdoutoffer.cpp
  monitor/bannerbar.h monitor/bannerbar.cpp
  monitor/failuretriage.h monitor/failuretriage.cpp
  monitor/runstatuspanel.h monitor/runstatuspanel.cpp
  monitor/runoutput.h monitor/runoutput.cpp
  monitor/logview.h monitor/logview.cpp
  monitor/eventstimeline.h monitor/eventstimeline.cpp
  monitor/rankmemorypanel.h monitor/rankmemorypanel.cpp
  monitor/monitortexts.h monitor/monitortexts.cpp
  monitor/monitorpage.h monitor/monitorpage.cpp
  monitor/runspage.h monitor/runspage.cpp
  monitor/runsfilter.h monitor/runsfilter.cpp
  monitor/runscolumns.h monitor/runscolumns.cpp
  monitor/runactions.h monitor/runactions.cpp
  monitor/rundiffdialog.h monitor/rundiffdialog.cpp
  monitor/stackdialog.h monitor/stackdialog.cpp
  monitor/remotehosts.h monitor/remotehosts.cpp # SSH (accel_hosts, linked by cluster/cluster.cmake)
  monitor/remotecatalogue.h monitor/remotecatalogue.cpp
)
target_link_libraries(accel_studio_ui PUBLIC accel_monitor accel_launcher QCustomPlotQt6::QCustomPlotQt6)
# A remote run's Monitor page follows it through RemoteRunFollower (app/remote).
target_link_libraries(accel_studio_ui PUBLIC accel_remote)
