// Line-preserving edits of a YAML config file: given the file's text, the text Accelerate's
// writer gives for the config as it was loaded (`before`) and for the edited config (`after`),
// change only the lines of the keys that changed. Comments, blank lines, key order, quoting and
// defaults the file never spelled out stay as they were; a key the edit adds goes where the
// writer's sorted order puts it, a key it drops loses its lines. Unchanged config: the same bytes.
#pragma once

#include <QString>

#include <optional>

namespace accel::app {

// nullopt when `original` is not plain block YAML that this patcher understands (flow mappings,
// JSON text, anchors...): the caller then writes `after` whole.
std::optional<QString> patchConfigText(const QString &original, const QString &before, const QString &after);

} // namespace accel::app
