// The argument parser every `accel` command uses: `--a_b` and `--a-b` spellings, `--opt value`
// and `--opt=value`, repeatable options, positionals, a "rest" positional after which everything
// is passed through untouched (scripts' own arguments), generated --help, and errors that name
// the flag and suggest the closest known one. Qt-free so it is testable on its own.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace accel::cli {

struct OptionSpec {
    std::string name;      // canonical spelling with underscores, without dashes: "num_processes"
    std::string valueName; // empty for a flag without a value
    std::string help;
    std::string defaultValue; // shown in --help only
    char shortName = 0;       // e.g. 'q' for -q
    bool repeatable = false;
    std::vector<std::string> choices; // when not empty, the value must be one of these
};

struct PositionalSpec {
    std::string name;
    std::string help;
    bool optional = false;
    bool rest = false; // takes this and every following argument verbatim
};

class ArgParser {
public:
    ArgParser(std::string program, std::string summary);

    void addOption(OptionSpec spec);
    void addFlag(const std::string &name, const std::string &help, char shortName = 0);
    void addValue(const std::string &name, const std::string &valueName, const std::string &help,
                  const std::string &defaultValue = {});
    void addPositional(PositionalSpec spec);
    void setEpilog(std::string text) { m_epilog = std::move(text); }

    // Parses argv[first..argc). Returns false on error (see error()) or when --help was given
    // (helpRequested() is then true; the caller prints helpText() and exits 0).
    bool parse(int argc, char **argv, int first = 1);
    bool parse(const std::vector<std::string> &args);

    bool helpRequested() const { return m_helpRequested; }
    const std::string &error() const { return m_error; }
    std::string helpText() const;

    bool isSet(const std::string &name) const; // typed on the command line
    std::optional<std::string> value(const std::string &name) const;
    std::string valueOr(const std::string &name, const std::string &fallback) const;
    std::vector<std::string> values(const std::string &name) const;
    std::vector<std::string> positional(const std::string &name) const;
    std::optional<std::string> firstPositional(const std::string &name) const;

    // Canonical option name for a spelling: strips dashes, maps '-' to '_'.
    static std::string canonical(const std::string &spelling);

private:
    const OptionSpec *findLong(const std::string &name) const;
    const OptionSpec *findShort(char c) const;

    std::string m_program;
    std::string m_summary;
    std::string m_epilog;
    std::vector<OptionSpec> m_options;
    std::vector<PositionalSpec> m_positionals;
    std::map<std::string, std::vector<std::string>> m_values;
    std::map<std::string, std::vector<std::string>> m_positionalValues;
    bool m_helpRequested = false;
    std::string m_error;
};

// "accel.env, version 1": how a --json flag's help names the document it prints, from the writer's
// name and version constants.
std::string schemaAndVersion(const std::string &schema, int version);

// Rewrites an option that takes several values (argparse's nargs="+") into repeated options:
// `--dtypes a b,c` becomes `--dtypes a --dtypes b --dtypes c`. Following arguments are taken
// while every comma-separated item is accepted, so a positional after the list stays positional.
// With `passFirstRejected`, a first value that is rejected (and is not an option) is still
// passed on, so that the parser can name it in its error.
std::vector<std::string> expandMultiValueOption(int argc, char **argv, const std::string &name,
                                                const std::function<bool(const std::string &)> &accepts,
                                                bool passFirstRejected);

} // namespace accel::cli
