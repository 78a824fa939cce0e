# The Launch page of accel-studio (included by app/studio/CMakeLists.txt).
target_sources(accel_studio_ui PRIVATE
  launch/launchpage.h launch/launchpage.cpp
  launch/recipeform.h launch/recipeform.cpp
)
target_link_libraries(accel_studio_ui PUBLIC accel_launch_export accel_launcher)
