#include "app/studio/configvaluetext.h"

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

} // namespace accel::app::configtext
