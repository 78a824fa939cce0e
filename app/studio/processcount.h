// "How many processes will start" for the studio's Configure and Launch pages: the launcher's
// own merge of the config (what `accel launch --config_file` does), worded by the launcher.
#pragma once

#include "core/config/clusterconfig.h"

#include <QString>

namespace accel::app {

// "2 processes on this machine", or why the launch would refuse the config (`accepted` false).
QString processCountFor(const config::ClusterConfig &config, bool *accepted = nullptr);
// The same for a config file; empty when `path` is empty.
QString processCountForFile(const QString &path, bool *accepted = nullptr);

} // namespace accel::app
