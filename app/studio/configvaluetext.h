// How a config value reads as form text and back, for the Configure form's bindings: one
// toText/fromText pair per value type (fromText says why text does not fit: "expected a whole
// number; got 'x'"), and bind(), which makes a FieldBinding for a key of the typed config.
#pragma once

#include "app/studio/configbinding.h"

#include <optional>

namespace accel::app::configtext {

QString toText(const std::string &value);
QString toText(bool value);
QString toText(std::int64_t value);
QString toText(double value);
QString toText(const config::BoolOrString &value);
QString fromText(const QString &text, std::string &out);
QString fromText(const QString &text, bool &out);
QString fromText(const QString &text, std::int64_t &out);
QString fromText(const QString &text, double &out);
QString fromText(const QString &text, config::BoolOrString &out);

template <typename T>
std::optional<QString> readOptional(const std::optional<T> &value)
{
    return value ? std::optional<QString>(toText(*value)) : std::nullopt;
}

template <typename T>
QString writeOptional(std::optional<T> &target, const std::optional<QString> &text)
{
    if (!text) {
        target.reset();
        return {};
    }
    T value{};
    const QString error = fromText(*text, value);
    if (error.isEmpty())
        target = value;
    return error;
}

// A top-level key: `std::optional<T> config::ClusterConfig::*`.
template <typename T>
FieldBinding bind(FieldSpec spec, std::optional<T> config::ClusterConfig::*member)
{
    return {std::move(spec), [member](const config::ClusterConfig &c) { return readOptional(c.*member); },
            [member](config::ClusterConfig &c, const std::optional<QString> &text) {
                return writeOptional(c.*member, text);
            }};
}

// A key of a nested block: `block.member`.
template <typename Block, typename T>
FieldBinding bind(FieldSpec spec, Block config::ClusterConfig::*block, std::optional<T> Block::*member)
{
    return {std::move(spec), [block, member](const config::ClusterConfig &c) { return readOptional(c.*block.*member); },
            [block, member](config::ClusterConfig &c, const std::optional<QString> &text) {
                return writeOptional(c.*block.*member, text);
            }};
}

// A key of a nested block that Accelerate's readers know by one spelling (`working`) while other
// writers use another that has no effect (`other`; fp8_config's amax_history_length, which the
// questionnaire writes, for amax_history_len, which the recipe reads): shows the value of either
// spelling (the working one when both are set), writes the working one and drops the other, so
// that an edited file holds the one spelling that works.
template <typename Block, typename T>
FieldBinding bindEitherSpelling(FieldSpec spec, Block config::ClusterConfig::*block, std::optional<T> Block::*working,
                                std::optional<T> Block::*other)
{
    return {std::move(spec),
            [block, working, other](const config::ClusterConfig &c) {
                const Block &values = c.*block;
                return readOptional(values.*working ? values.*working : values.*other);
            },
            [block, working, other](config::ClusterConfig &c, const std::optional<QString> &text) {
                const QString error = writeOptional(c.*block.*working, text);
                if (error.isEmpty())
                    (c.*block.*other).reset();
                return error;
            }};
}

} // namespace accel::app::configtext
