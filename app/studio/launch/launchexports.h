// The Launch page's Export menu: the config in another format and the command in its four forms
// (launcher/export), written to files; command scripts are made executable.
#pragma once

#include "core/common/result.h"
#include "launcher/export/commandexport.h"

#include <QString>

namespace accel::app {

struct ExportChoice {
    const char *label;  // menu text
    const char *suffix; // proposed file suffix
    int form;           // -1 YAML config, -2 JSON config, else an ExportForm
};
// Two config formats, then the four command forms.
const ExportChoice *exportChoices(int *count);

// The config file read and written again, the format by `path`'s extension.
Result<void> saveConfigCopy(const QString &configPath, const QString &path);
// `text` as an executable script at `path` (#!/bin/bash first, except sbatch scripts, which
// carry their own first line).
Result<void> writeCommandScript(launcher::exporting::ExportForm form, const std::string &text, const QString &path);

} // namespace accel::app
