// Shared helpers of the tokenizer tests: the hand-made fixtures in tests/data/tokenizers (written
// by make_fixtures.py there) and variants of them with a few JSON fields changed.
#pragma once

#include "core/tokenizer/tokenizer.h"
#include "tests/helpers/testsupport.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <functional>
#include <string>
#include <vector>

namespace accel::test {

using Ids = std::vector<int32_t>;

inline std::string fixturePath(const char *name)
{
    return dataPath(QStringLiteral("tokenizers/") + QLatin1String(name)).toStdString();
}

inline tokenizer::Tokenizer loadFixture(const char *name)
{
    auto loaded = tokenizer::Tokenizer::load(fixturePath(name));
    if (!loaded)
        qFatal("cannot load %s: %s", name, loaded.error().toString().c_str());
    return *loaded;
}

// The fixture with `change` applied to its JSON, loaded from a file in `dir`.
inline tokenizer::Tokenizer loadVariant(const QTemporaryDir &dir, const char *name,
                                        const std::function<void(QJsonObject &)> &change)
{
    QFile in(QString::fromStdString(fixturePath(name)));
    if (!in.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", name);
    QJsonObject root = QJsonDocument::fromJson(in.readAll()).object();
    change(root);
    const QString path = dir.filePath(QStringLiteral("variant.json"));
    QFile out(path);
    if (!out.open(QIODevice::WriteOnly | QIODevice::Truncate))
        qFatal("cannot write %s", qPrintable(path));
    out.write(QJsonDocument(root).toJson());
    out.close();
    auto loaded = tokenizer::Tokenizer::load(path.toStdString());
    if (!loaded)
        qFatal("cannot load variant of %s: %s", name, loaded.error().toString().c_str());
    return *loaded;
}

inline QString idsText(const Ids &ids)
{
    QStringList parts;
    for (const int32_t id : ids)
        parts << QString::number(id);
    return QLatin1Char('[') + parts.join(QLatin1String(", ")) + QLatin1Char(']');
}

} // namespace accel::test

// Compares id lists and prints both on failure.
#define ACCEL_COMPARE_IDS(actual, expected) QCOMPARE(accel::test::idsText(actual), accel::test::idsText(expected))
