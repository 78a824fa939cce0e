#include "launcher/jsonoutput.h"

#include <QJsonDocument>

namespace accel::launcher {

QByteArray schemaJson(const QString &schema, int version, QJsonObject body, bool compact)
{
    body.remove(QStringLiteral("schema"));
    body.remove(QStringLiteral("version"));
    const QByteArray name =
        QJsonDocument(QJsonObject{{QStringLiteral("s"), schema}}).toJson(QJsonDocument::Compact).mid(5);
    const QByteArray quoted = name.left(name.size() - 1); // "schema-name" with JSON escaping
    const QByteArray number = QByteArray::number(version);
    if (compact) {
        QByteArray text = "{\"schema\":" + quoted + ",\"version\":" + number;
        if (!body.isEmpty())
            text += "," + QJsonDocument(body).toJson(QJsonDocument::Compact).mid(1);
        else
            text += "}";
        return text;
    }
    QByteArray text = "{\n    \"schema\": " + quoted + ",\n    \"version\": " + number;
    if (!body.isEmpty())
        text += ",\n" + QJsonDocument(body).toJson(QJsonDocument::Indented).mid(2);
    else
        text += "\n}\n";
    return text;
}

QByteArray schemaJson(const QJsonObject &document, bool compact)
{
    return schemaJson(document.value(QStringLiteral("schema")).toString(),
                      document.value(QStringLiteral("version")).toInt(1), document, compact);
}

} // namespace accel::launcher
