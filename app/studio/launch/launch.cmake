# The Launch page of accel-studio (included by app/studio/CMakeLists.txt): the page, what it runs
# (ProgramChoice, RecipeForm, FineTuneForm with its DataPreviewPanel; AccelQuery, the accel question it and the memory panel ask; the Python interpreter: InterpreterField, pythoninterpreters), where (LaunchTarget), starting and stopping (RunControl), a cluster
# launch's nodes (ClusterRunView) and the exports.
target_sources(accel_studio_ui PRIVATE
  launch/launchpage.h launch/launchpage.cpp
  launch/programchoice.h launch/programchoice.cpp
  launch/interpreterfield.h launch/interpreterfield.cpp
  launch/pythoninterpreters.h launch/pythoninterpreters.cpp
  launch/recipeform.h launch/recipeform.cpp
  launch/launchtarget.h launch/launchtarget.cpp
  launch/runcontrol.h launch/runcontrol.cpp
  launch/clusterrunview.h launch/clusterrunview.cpp
  launch/launchexports.h launch/launchexports.cpp
  launch/memoryestimatepanel.h launch/memoryestimatepanel.cpp
  launch/finetuneform.h launch/finetuneform.cpp
  launch/datapreviewpanel.h launch/datapreviewpanel.cpp
  launch/accelquery.h launch/accelquery.cpp
)
target_link_libraries(accel_studio_ui PUBLIC accel_launch_export accel_launcher)
