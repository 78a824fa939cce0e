// The table that ties each form field to one key of the typed config model: the field's spec,
// how to show the key's value as text and how to write edited text back (with a readable error
// when the text does not fit the key's type). Groups follow the Configure page's layout.
#pragma once

#include "app/studio/fieldeditor.h"
#include "core/config/clusterconfig.h"

#include <QString>

#include <functional>
#include <optional>
#include <vector>

namespace accel::app {

struct FieldBinding {
    FieldSpec spec;
    std::function<std::optional<QString>(const config::ClusterConfig &)> get;
    // Returns "" on success, else why `value` does not fit (the model is left unchanged).
    std::function<QString(config::ClusterConfig &, const std::optional<QString> &value)> set;
};

struct FieldGroup {
    QString title; // "General and topology", "Mixed precision and FP8", ...
    QString objectName;
    int column = 0; // 0: left, 1: right column of the form
    std::vector<FieldBinding> fields;
};

// Every group of the Configure form, in display order.
const std::vector<FieldGroup> &configFieldGroups();

} // namespace accel::app
