// ASCII text helpers every library uses (config values, environment variables, /proc files): one
// definition instead of a copy per file.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

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

// Equal up to the case of ASCII letters.
inline bool equalsIgnoringCase(std::string_view a, std::string_view b)
{
    auto folded = [](unsigned char c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; };
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) {
               return folded(static_cast<unsigned char>(x)) == folded(static_cast<unsigned char>(y));
           });
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

// The items of `text` between any of `separators`, each trimmed (trim), empty ones left out:
// splitTrimmed(" a, b,,c ", ",") is {"a", "b", "c"}.
inline std::vector<std::string> splitTrimmed(std::string_view text, std::string_view separators)
{
    std::vector<std::string> items;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find_first_of(separators, start), text.size());
        if (std::string item = trim(text.substr(start, end - start)); !item.empty())
            items.push_back(std::move(item));
        start = end + 1;
    }
    return items;
}

} // namespace accel::text
