// The cluster's host list as the studio keeps it: typed as "gpu1, gpu2" (commas or spaces), each
// host a ~/.ssh/config alias or [user@]host[:port] with the characters accel accepts in a
// destination, and remembered in the studio's settings for the Hardware and Launch pages.
#pragma once

#include "core/common/result.h"

#include <QStringList>

namespace accel::app {

// The hosts in order, duplicates dropped. An empty list or a host with another character is an
// InvalidInput error naming the host and what is valid.
Result<QStringList> parseHostList(const QString &text);
// "gpu1,gpu2": the form `accel hosts` and `accel launch --hosts` take.
QString hostListArgument(const QStringList &hosts);

// The list last checked or launched on (QSettings "cluster/hosts"), empty at first.
QStringList rememberedHosts();
void rememberHosts(const QStringList &hosts);

} // namespace accel::app
