#include "core/config/diagnostic.h"

#include <algorithm>

namespace accel::config {

std::string Diagnostic::toString() const
{
    std::string out;
    if (!file.empty())
        out += file + ": ";
    if (line > 0)
        out += "line " + std::to_string(line) + ": ";
    if (!key.empty()) {
        const size_t dot = key.rfind('.');
        out += (dot == std::string::npos ? key : key.substr(dot + 1)) + ": ";
    }
    if (severity == Severity::Warning)
        out += "warning: ";
    return out + message;
}

bool hasErrors(const Diagnostics &diagnostics)
{
    return std::any_of(diagnostics.begin(), diagnostics.end(),
                       [](const Diagnostic &d) { return d.severity == Severity::Error; });
}

} // namespace accel::config
