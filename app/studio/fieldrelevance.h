// Which Configure fields matter for a config: the keys of its distributed type (FSDP, DeepSpeed,
// multi-node, ...) and of its precision (FP8 and its backend), so the form shows those and keeps
// the rest one click away ("Show all fields"). One rule, used by the form and its tests.
#pragma once

#include "core/config/clusterconfig.h"

#include <QString>

namespace accel::app {

// `key` as the form names it ("num_processes", "fsdp_config.fsdp_version", "fp8_config.margin").
bool fieldApplies(const QString &key, const config::ClusterConfig &config);

} // namespace accel::app
