// How a config value reads as form text and back, for the Configure form's bindings: one
// toText/fromText pair per value type (fromText says why text does not fit: "expected a whole
// number; got 'x'"), and bind(), which makes a FieldBinding for a key of the typed config by name.
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

// The value of a key the config schema declares, by its dotted name (core/config/schemakey.h):
// readKey gives its text (nullopt: not set), writeKey sets it from text ("" on success, else why
// the text does not fit; nullopt text removes the key).
std::optional<QString> readKey(const config::ClusterConfig &config, const std::string &dottedKey);
QString writeKey(config::ClusterConfig &config, const std::string &dottedKey, const std::optional<QString> &text);

// A field for the schema's key spec.key.
FieldBinding bind(FieldSpec spec);

// A key of a nested block that Accelerate's readers know by one spelling (spec.key) while other
// writers use another that has no effect (`otherKey`; fp8_config.amax_history_length, which the
// questionnaire writes, for amax_history_len, which the recipe reads): shows the value of either
// spelling (the working one when both are set), writes the working one and drops the other, so
// that an edited file holds the one spelling that works.
FieldBinding bindEitherSpelling(FieldSpec spec, const std::string &otherKey);

} // namespace accel::app::configtext
