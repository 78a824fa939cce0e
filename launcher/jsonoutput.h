// JSON documents whose first keys are "schema" and "version" (QJsonDocument sorts keys, so the
// header is written by hand in front of the sorted body). Every --json output and run.json use it.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QString>

namespace accel::launcher {

// `accel launch --detach --json`'s reply (cmd_launch_support.cpp writes it; accel hosts launch and
// the studio's Launch page read it): {"schema","version","id","run_dir","supervisor_pid"}.
inline constexpr const char *LaunchDetachedSchema = "accel.launch-detached";
inline constexpr int LaunchDetachedVersion = 1;

// `body` must not contain "schema" or "version" (they are dropped if it does).
QByteArray schemaJson(const QString &schema, int version, QJsonObject body, bool compact = false);
// Same, taking "schema" and "version" from `document` itself.
QByteArray schemaJson(const QJsonObject &document, bool compact = false);

} // namespace accel::launcher
