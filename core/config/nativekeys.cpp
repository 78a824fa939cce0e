#include "core/config/nativekeys.h"

#include "core/common/text.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace accel::config::native {

namespace {

std::vector<std::string_view> words(std::string_view text, char separator = ' ')
{
    std::vector<std::string_view> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find(separator, start), text.size());
        if (end > start)
            out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

// Every name of one column -> its row.
using Index = std::map<std::string, const Key *, std::less<>>;

Index makeIndex(const char *Key::*column)
{
    Index index;
    for (const Section &section : sections()) {
        for (const Key &key : section.keys) {
            for (std::string_view name : words(key.*column))
                index.emplace(std::string(name), &key);
        }
    }
    return index;
}

const Key *find(const Index &index, std::string_view name)
{
    const auto it = index.find(name);
    return it == index.end() ? nullptr : it->second;
}

// A table cell: `code` spans, "" as a dash, '|' escaped.
std::string cell(std::string_view text, bool code)
{
    if (text.empty())
        return "-";
    std::string out;
    const auto parts = code ? words(text) : std::vector<std::string_view>{text};
    for (std::string_view part : parts) {
        if (!out.empty())
            out += "<br>";
        if (code)
            out += "`";
        for (char c : part)
            out += c == '|' ? std::string("\\|") : std::string(1, c);
        if (code)
            out += "`";
    }
    return out;
}

// "refused unless `1` or `none`", "noted when set", ...
std::string verdictText(const Key &key)
{
    const std::string_view inert = key.inert;
    std::string values;
    const auto list = words(inert, ',');
    for (size_t i = 0; i < list.size(); ++i)
        values += std::string(i == 0 ? "" : i + 1 == list.size() ? " or " : ", ") + "`" + std::string(list[i]) + "`";
    switch (key.verdict) {
    case Verdict::Acted:
        return "acted on";
    case Verdict::Refused:
        return inert == "*"    ? "refused with the key it comes with"
               : inert.empty() ? "refused when set"
                               : "refused unless " + values;
    case Verdict::Meaningless:
        return inert == "*"    ? "meaningless for C++ (set by accel launch itself: not noted)"
               : inert.empty() ? "meaningless for C++: noted when set"
                               : "meaningless for C++: noted unless " + values;
    case Verdict::PythonOnly:
        return "Python API only";
    }
    return {};
}

} // namespace

const Key *findConfigKey(std::string_view dottedKey)
{
    static const Index index = makeIndex(&Key::config);
    return find(index, dottedKey);
}

const Key *findVariable(std::string_view name)
{
    static const Index index = makeIndex(&Key::variables);
    return find(index, name);
}

const Key *findPythonField(std::string_view classDotField)
{
    static const Index index = makeIndex(&Key::python);
    return find(index, classDotField);
}

const Key *findDeepSpeedKey(std::string_view path)
{
    static const Index index = makeIndex(&Key::json);
    return find(index, path);
}

bool isInert(const Key &key, std::string_view value)
{
    const std::string_view inert = key.inert;
    if (inert == "*")
        return true;
    if (value.empty())
        return true; // absent or empty asks for nothing
    for (std::string_view candidate : words(inert, ','))
        if (text::equalsIgnoringCase(candidate, value))
            return true;
    return false;
}

std::string keyName(const Key &key, std::string_view variable, std::string_view value)
{
    std::string name = *key.config ? key.config : *key.json ? key.json : "";
    if (variable.empty() && *key.variables)
        variable = words(key.variables).front();
    if (!variable.empty()) {
        const std::string assignment = std::string(variable) + (value.empty() ? "" : "=" + std::string(value));
        name = name.empty() ? assignment : name + " (" + assignment + ")";
    } else if (!value.empty()) {
        name += ": " + std::string(value);
    }
    return name;
}

const char *actorName(Actor actor)
{
    switch (actor) {
    case Actor::Startup:
        return "rank start-up";
    case Actor::Launcher:
        return "accel launch";
    case Actor::Runtime:
        return "runtime";
    case Actor::Plan:
        return "sharding plan";
    case Actor::Fp8:
        return "FP8 settings";
    case Actor::Nobody:
        return "-";
    }
    return "";
}

std::string markdownTable()
{
    std::ostringstream out;
    for (const Section &section : sections()) {
        out << "### " << section.title << "\n\n";
        out << "| Key | Variable | Accelerate field | DeepSpeed file | Native job | By | Meaning |\n";
        out << "| --- | --- | --- | --- | --- | --- | --- |\n";
        for (const Key &key : section.keys) {
            out << "| " << cell(key.config, true) << " | " << cell(key.variables, true) << " | "
                << cell(key.python, true) << " | " << cell(key.json, true) << " | " << verdictText(key) << " | "
                << actorName(key.by) << " | " << cell(key.meaning, false) << " |\n";
        }
        out << "\n";
    }
    return out.str();
}

} // namespace accel::config::native
