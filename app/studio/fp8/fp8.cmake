# The FP8 comparison of accel-studio (included by app/studio/CMakeLists.txt): a dialog that runs
# `accel bench fp8 --json` and shows its table and loss curves.
target_sources(accel_studio_ui PRIVATE
  fp8/fp8comparison.h fp8/fp8comparison.cpp
  fp8/fp8resultsmodel.h fp8/fp8resultsmodel.cpp
  fp8/fp8comparedialog.h fp8/fp8comparedialog.cpp
)
