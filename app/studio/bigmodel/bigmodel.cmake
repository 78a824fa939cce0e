# The Big Models pages of accel-studio (included by app/studio/CMakeLists.txt). Planning only:
# the studio never links libtorch; inference runs in an `accel-worker serve` child process.
target_sources(accel_studio_ui PRIVATE
  bigmodel/devicemapplan.h bigmodel/devicemapplan.cpp
  bigmodel/devicelanesview.h bigmodel/devicelanesview.cpp
  bigmodel/devicemaprequest.h bigmodel/devicemaprequest.cpp
  bigmodel/devicemappage.h bigmodel/devicemappage.cpp
  bigmodel/bigmodelspage.h bigmodel/bigmodelspage.cpp
  bigmodel/workerclient.h bigmodel/workerclient.cpp
  bigmodel/playgroundsampling.h bigmodel/playgroundsampling.cpp
  bigmodel/playgroundchat.h bigmodel/playgroundchat.cpp
  bigmodel/playgroundrequest.h bigmodel/playgroundrequest.cpp
  bigmodel/playgroundcluster.h bigmodel/playgroundcluster.cpp
  bigmodel/playgroundloadoptions.h bigmodel/playgroundloadoptions.cpp
  bigmodel/playgroundpage.h bigmodel/playgroundpage.cpp
)
target_link_libraries(accel_studio_ui PUBLIC accel_bigmodel)
