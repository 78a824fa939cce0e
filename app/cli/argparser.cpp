#include "app/cli/argparser.h"

#include "core/common/fileutil.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace accel::cli {

ArgParser::ArgParser(std::string program, std::string summary)
    : m_program(std::move(program)), m_summary(std::move(summary))
{}

void ArgParser::addOption(OptionSpec spec)
{
    spec.name = canonical(spec.name);
    m_options.push_back(std::move(spec));
}

void ArgParser::addFlag(const std::string &name, const std::string &help, char shortName)
{
    OptionSpec spec;
    spec.name = name;
    spec.help = help;
    spec.shortName = shortName;
    addOption(std::move(spec));
}

void ArgParser::addValue(const std::string &name, const std::string &valueName, const std::string &help,
                         const std::string &defaultValue)
{
    OptionSpec spec;
    spec.name = name;
    spec.valueName = valueName;
    spec.help = help;
    spec.defaultValue = defaultValue;
    addOption(std::move(spec));
}

void ArgParser::addPositional(PositionalSpec spec)
{
    m_positionals.push_back(std::move(spec));
}

std::string ArgParser::canonical(const std::string &spelling)
{
    std::string name = spelling;
    while (!name.empty() && name.front() == '-')
        name.erase(name.begin());
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

const OptionSpec *ArgParser::findLong(const std::string &name) const
{
    for (const OptionSpec &spec : m_options) {
        if (spec.name == name)
            return &spec;
    }
    return nullptr;
}

const OptionSpec *ArgParser::findShort(char c) const
{
    for (const OptionSpec &spec : m_options) {
        if (spec.shortName == c)
            return &spec;
    }
    return nullptr;
}

bool ArgParser::parse(int argc, char **argv, int first)
{
    std::vector<std::string> args;
    for (int i = first; i < argc; ++i)
        args.emplace_back(argv[i]);
    return parse(args);
}

bool ArgParser::parse(const std::vector<std::string> &args)
{
    m_values.clear();
    m_positionalValues.clear();
    m_helpRequested = false;
    m_error.clear();
    size_t positionalIndex = 0;
    bool onlyPositionals = false;

    for (size_t i = 0; i < args.size(); ++i) {
        const std::string &arg = args[i];
        const bool restActive = positionalIndex < m_positionals.size() && m_positionals[positionalIndex].rest &&
                                m_positionalValues.count(m_positionals[positionalIndex].name);
        if (restActive) {
            m_positionalValues[m_positionals[positionalIndex].name].push_back(arg);
            continue;
        }
        if (!onlyPositionals && arg == "--") {
            onlyPositionals = true;
            continue;
        }
        if (!onlyPositionals && (arg == "--help" || arg == "-h")) {
            m_helpRequested = true;
            return false;
        }
        if (!onlyPositionals && arg.size() > 1 && arg[0] == '-' &&
            !(arg.size() > 1 && std::isdigit(static_cast<unsigned char>(arg[1])))) {
            std::string name;
            std::optional<std::string> inlineValue;
            const OptionSpec *spec = nullptr;
            if (arg[1] == '-') {
                const size_t eq = arg.find('=');
                name = canonical(arg.substr(0, eq));
                if (eq != std::string::npos)
                    inlineValue = arg.substr(eq + 1);
                spec = findLong(name);
            } else if (arg.size() == 2) {
                spec = findShort(arg[1]);
                name = spec ? spec->name : arg;
            }
            if (!spec) {
                std::vector<std::string> names;
                for (const OptionSpec &o : m_options)
                    names.push_back(o.name);
                const std::string suggestion = fileutil::closestMatchIn(name, names);
                m_error = "unknown option '" + arg + "'";
                if (!suggestion.empty())
                    m_error += " (did you mean '--" + suggestion + "'?)";
                return false;
            }
            std::string value;
            if (!spec->valueName.empty()) {
                if (inlineValue) {
                    value = *inlineValue;
                } else if (i + 1 < args.size()) {
                    value = args[++i];
                } else {
                    m_error = "option '--" + spec->name + "' needs a value (" + spec->valueName + ")";
                    return false;
                }
                if (!spec->choices.empty() &&
                    std::find(spec->choices.begin(), spec->choices.end(), value) == spec->choices.end()) {
                    std::string list;
                    for (const std::string &c : spec->choices)
                        list += (list.empty() ? "" : ", ") + c;
                    m_error = "option '--" + spec->name + "': '" + value + "' is not one of " + list;
                    return false;
                }
            } else if (inlineValue) {
                m_error = "option '--" + spec->name + "' takes no value";
                return false;
            }
            auto &slot = m_values[spec->name];
            if (!slot.empty() && !spec->repeatable)
                slot.clear();
            slot.push_back(value);
            continue;
        }
        if (positionalIndex >= m_positionals.size()) {
            m_error = "unexpected argument '" + arg + "'";
            return false;
        }
        const PositionalSpec &pos = m_positionals[positionalIndex];
        m_positionalValues[pos.name].push_back(arg);
        if (!pos.rest)
            ++positionalIndex;
    }
    for (size_t p = 0; p < m_positionals.size(); ++p) {
        const PositionalSpec &pos = m_positionals[p];
        if (!pos.optional && !m_positionalValues.count(pos.name)) {
            m_error = "missing argument " + pos.name;
            return false;
        }
    }
    return true;
}

std::string ArgParser::helpText() const
{
    std::ostringstream out;
    out << "usage: " << m_program;
    if (!m_options.empty())
        out << " [options]";
    for (const PositionalSpec &pos : m_positionals) {
        std::string shown = pos.name + (pos.rest ? " ..." : "");
        out << ' ' << (pos.optional ? "[" + shown + "]" : shown);
    }
    out << "\n\n" << m_summary << "\n";
    if (!m_positionals.empty()) {
        out << "\narguments:\n";
        for (const PositionalSpec &pos : m_positionals)
            out << "  " << pos.name << std::string(pos.name.size() < 28 ? 28 - pos.name.size() : 1, ' ') << pos.help
                << "\n";
    }
    out << "\noptions:\n  -h, --help                  show this help and exit\n";
    for (const OptionSpec &spec : m_options) {
        std::string left = spec.shortName ? std::string("-") + spec.shortName + ", " : std::string("    ");
        left += "--" + spec.name;
        if (!spec.valueName.empty())
            left += " " + spec.valueName;
        out << "  " << left;
        out << std::string(left.size() < 28 ? 28 - left.size() : 1, ' ') << spec.help;
        if (!spec.choices.empty()) {
            out << " {";
            for (size_t i = 0; i < spec.choices.size(); ++i)
                out << (i ? "," : "") << spec.choices[i];
            out << "}";
        }
        if (!spec.defaultValue.empty())
            out << " (default: " << spec.defaultValue << ")";
        out << "\n";
    }
    if (!m_epilog.empty())
        out << "\n" << m_epilog << "\n";
    return out.str();
}

bool ArgParser::isSet(const std::string &name) const
{
    return m_values.count(canonical(name)) > 0;
}

std::optional<std::string> ArgParser::value(const std::string &name) const
{
    auto it = m_values.find(canonical(name));
    if (it == m_values.end() || it->second.empty())
        return std::nullopt;
    return it->second.back();
}

std::string ArgParser::valueOr(const std::string &name, const std::string &fallback) const
{
    return value(name).value_or(fallback);
}

std::vector<std::string> ArgParser::values(const std::string &name) const
{
    auto it = m_values.find(canonical(name));
    return it == m_values.end() ? std::vector<std::string>{} : it->second;
}

std::vector<std::string> ArgParser::positional(const std::string &name) const
{
    auto it = m_positionalValues.find(name);
    return it == m_positionalValues.end() ? std::vector<std::string>{} : it->second;
}

std::optional<std::string> ArgParser::firstPositional(const std::string &name) const
{
    auto values = positional(name);
    if (values.empty())
        return std::nullopt;
    return values.front();
}

std::vector<std::string> expandMultiValueOption(int argc, char **argv, const std::string &name,
                                                const std::function<bool(const std::string &)> &accepts,
                                                bool passFirstRejected)
{
    const std::string wanted = ArgParser::canonical(name);
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0 || arg.find('=') != std::string::npos || ArgParser::canonical(arg) != wanted) {
            args.push_back(arg);
            continue;
        }
        bool any = false;
        while (i + 1 < argc) {
            std::vector<std::string> items;
            std::stringstream stream(argv[i + 1]);
            std::string item;
            while (std::getline(stream, item, ','))
                items.push_back(item);
            const bool allAccepted = !items.empty() && std::all_of(items.begin(), items.end(), accepts);
            if (!allAccepted && (!passFirstRejected || any || argv[i + 1][0] == '-'))
                break;
            ++i;
            for (const std::string &x : items) {
                args.push_back(arg);
                args.push_back(x);
            }
            any = true;
            if (!allAccepted)
                break; // a single rejected value: the parser names it
        }
        if (!any)
            args.push_back(arg);
    }
    return args;
}

std::string schemaAndVersion(const std::string &schema, int version)
{
    return schema + ", version " + std::to_string(version);
}

} // namespace accel::cli
