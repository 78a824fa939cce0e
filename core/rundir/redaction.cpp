#include "core/rundir/redaction.h"

#include <algorithm>
#include <cctype>

namespace accel::rundir {

bool isSecretName(std::string_view name)
{
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const char *word : {"secret", "token", "password", "passwd", "key"}) {
        if (lower.find(word) != std::string::npos)
            return true;
    }
    return false;
}

std::vector<std::string> redactArguments(const std::vector<std::string> &arguments)
{
    std::vector<std::string> out;
    out.reserve(arguments.size());
    bool redactNext = false;
    for (const std::string &argument : arguments) {
        if (redactNext) {
            redactNext = false;
            if (argument.rfind("-", 0) != 0 || argument == "-") {
                out.emplace_back(kRedacted);
                continue;
            }
        }
        const size_t equals = argument.find('=');
        if (equals != std::string::npos && equals > 0) {
            const std::string_view name(argument.data(), equals);
            if (isSecretName(name)) {
                out.push_back(argument.substr(0, equals + 1) + kRedacted);
                continue;
            }
        } else if (argument.size() > 1 && argument[0] == '-' && isSecretName(argument)) {
            redactNext = true; // "--api_key VALUE"
        }
        out.push_back(argument);
    }
    return out;
}

} // namespace accel::rundir
