// Internal: the typed model <-> the document tree (configvalue.h). Reading reports every problem
// with its line; writing produces the dict Accelerate's to_dict() would (nulls and empty blocks
// left out).
#pragma once

#include "core/config/clusterconfig.h"
#include "core/config/configvalue.h"
#include "core/config/diagnostic.h"

#include <string>

namespace accel::config::detail {

// Never throws; problems go to `diagnostics` (the result is meaningful only without errors).
ClusterConfig readConfigTree(const ConfigValue &root, const std::string &fileName, Diagnostics &diagnostics);
ConfigValue writeConfigTree(const ClusterConfig &config);

ConfigValue scalarToValue(const Scalar &scalar);

} // namespace accel::config::detail
