// ASCII text helpers every library uses (config values, environment variables, /proc files): one
// definition instead of a copy per file.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace accel::text {

inline std::string lower(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); });
    return text;
}

inline std::string upper(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c); });
    return text;
}

// Without leading and trailing ASCII white space (space, \t, \r, \n, \v, \f).
inline std::string trim(std::string_view text)
{
    constexpr std::string_view space = " \t\r\n\v\f";
    const size_t first = text.find_first_not_of(space);
    if (first == std::string_view::npos)
        return {};
    return std::string(text.substr(first, text.find_last_not_of(space) - first + 1));
}

} // namespace accel::text
