#include "app/studio/configvaluetext.h"

#include "core/config/schemakey.h"

#include <cmath>

namespace accel::app::configtext {

using config::BoolOrString;

QString toText(const std::string &value)
{
    return QString::fromStdString(value);
}
QString toText(bool value)
{
    return value ? QStringLiteral("true") : QStringLiteral("false");
}
QString toText(std::int64_t value)
{
    return QString::number(value);
}
QString toText(double value)
{
    // Whole numbers keep a ".0" so the text reads as a float, like the file does.
    return std::floor(value) == value && std::abs(value) < 1e15 ? QString::number(value, 'f', 1)
                                                                : QString::number(value, 'g', 17);
}
QString toText(const BoolOrString &value)
{
    return std::holds_alternative<bool>(value) ? toText(std::get<bool>(value)) : toText(std::get<std::string>(value));
}

QString fromText(const QString &text, std::string &out)
{
    out = text.toStdString();
    return {};
}
QString fromText(const QString &text, bool &out)
{
    if (text.compare(QLatin1String("true"), Qt::CaseInsensitive) == 0)
        out = true;
    else if (text.compare(QLatin1String("false"), Qt::CaseInsensitive) == 0)
        out = false;
    else
        return QStringLiteral("expected true or false; got '%1'").arg(text);
    return {};
}
QString fromText(const QString &text, std::int64_t &out)
{
    bool ok = false;
    out = text.toLongLong(&ok);
    return ok ? QString() : QStringLiteral("expected a whole number; got '%1'").arg(text);
}
QString fromText(const QString &text, double &out)
{
    bool ok = false;
    out = text.toDouble(&ok);
    return ok ? QString() : QStringLiteral("expected a number such as 1.0; got '%1'").arg(text);
}
QString fromText(const QString &text, BoolOrString &out)
{
    bool flag = false;
    if (fromText(text, flag).isEmpty())
        out = flag;
    else
        out = text.toStdString();
    return {};
}

namespace {

using config::schema::Choices;
using config::schema::Range;

// Reads the visited key's value as text.
struct KeyReader {
    std::optional<QString> shown;
    void flag(const char *, std::optional<bool> &value) { shown = readOptional(value); }
    void integer(const char *, std::optional<std::int64_t> &value, Range) { shown = readOptional(value); }
    void number(const char *, std::optional<double> &value) { shown = readOptional(value); }
    void text(const char *, std::optional<std::string> &value, const Choices &) { shown = readOptional(value); }
    void boolOrText(const char *, std::optional<BoolOrString> &value, const Choices &) { shown = readOptional(value); }
    void textList(const char *, std::optional<std::vector<std::string>> &) {}
    void flagList(const char *, std::optional<std::vector<bool>> &, size_t, std::optional<BoolOrString> &) {}
};

// Writes text into the visited key.
struct KeyWriter {
    const std::optional<QString> &input;
    QString error;
    void flag(const char *, std::optional<bool> &value) { error = writeOptional(value, input); }
    void integer(const char *, std::optional<std::int64_t> &value, Range) { error = writeOptional(value, input); }
    void number(const char *, std::optional<double> &value) { error = writeOptional(value, input); }
    void text(const char *, std::optional<std::string> &value, const Choices &) { error = writeOptional(value, input); }
    void boolOrText(const char *, std::optional<BoolOrString> &value, const Choices &)
    {
        error = writeOptional(value, input);
    }
    void textList(const char *key, std::optional<std::vector<std::string>> &)
    {
        error = QStringLiteral("%1 is a list; the form does not edit it").arg(QLatin1String(key));
    }
    void flagList(const char *key, std::optional<std::vector<bool>> &, size_t, std::optional<BoolOrString> &)
    {
        error = QStringLiteral("%1 is a list; the form does not edit it").arg(QLatin1String(key));
    }
};

} // namespace

std::optional<QString> readKey(const config::ClusterConfig &config, const std::string &dottedKey)
{
    KeyReader reader;
    // The reader only reads: the schema's visitor functions take the model by non-const reference.
    config::schema::visitKey(const_cast<config::ClusterConfig &>(config), dottedKey, reader);
    return reader.shown;
}

QString writeKey(config::ClusterConfig &config, const std::string &dottedKey, const std::optional<QString> &text)
{
    KeyWriter writer{text, {}};
    if (!config::schema::visitKey(config, dottedKey, writer))
        return QStringLiteral("%1 is not a key of the config schema").arg(QString::fromStdString(dottedKey));
    return writer.error;
}

FieldBinding bind(FieldSpec spec)
{
    const std::string key = spec.key.toStdString();
    return {std::move(spec), [key](const config::ClusterConfig &c) { return readKey(c, key); },
            [key](config::ClusterConfig &c, const std::optional<QString> &text) { return writeKey(c, key, text); }};
}

FieldBinding bindEitherSpelling(FieldSpec spec, const std::string &otherKey)
{
    const std::string working = spec.key.toStdString();
    return {std::move(spec),
            [working, otherKey](const config::ClusterConfig &c) {
                const std::optional<QString> value = readKey(c, working);
                return value ? value : readKey(c, otherKey);
            },
            [working, otherKey](config::ClusterConfig &c, const std::optional<QString> &text) {
                const QString error = writeKey(c, working, text);
                if (error.isEmpty())
                    writeKey(c, otherKey, std::nullopt);
                return error;
            }};
}

} // namespace accel::app::configtext
