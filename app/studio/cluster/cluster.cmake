# The studio's side of remote clusters (included by app/studio/CMakeLists.txt): the Hardware page's
# Cluster section, the host key dialog, and reading `accel hosts ... --json`. Commands run through
# LocalHost (accel_hosts): the studio's accel reaches the hosts over SSH.
target_sources(accel_studio_ui PRIVATE
  cluster/hostlist.h cluster/hostlist.cpp
  cluster/clusterreports.h cluster/clusterreports.cpp
  cluster/clustercards.h cluster/clustercards.cpp
  cluster/hostkeydialog.h cluster/hostkeydialog.cpp
  cluster/clustersection.h cluster/clustersection.cpp
  cluster/slurmqueuepanel.h cluster/slurmqueuepanel.cpp # accel slurm queue / cancel in the Cluster tab
)
target_link_libraries(accel_studio_ui PUBLIC accel_hosts)
