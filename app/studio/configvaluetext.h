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

} // namespace accel::app::configtext
