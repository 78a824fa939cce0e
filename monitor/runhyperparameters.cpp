#include "monitor/runhyperparameters.h"

#include "core/config/configvalue.h"
#include "core/rundir/privatefiles.h"
#include "core/rundir/runlayout.h"
#include "monitor/runpath.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <cmath>

namespace accel::monitor {

namespace {

constexpr std::size_t kMaximumHyperparametersBytes = 4u << 20;

QString scalarText(const config::ConfigValue &value)
{
    using Type = config::ConfigValue::Type;
    switch (value.type) {
    case Type::Null:
        return QStringLiteral("null");
    case Type::Bool:
        return value.boolean ? QStringLiteral("true") : QStringLiteral("false");
    case Type::Int:
        return QString::number(value.integer);
    case Type::Float:
        return QString::fromStdString(config::pythonFloatRepr(value.real));
    case Type::String:
        return QString::fromStdString(value.text);
    case Type::List: {
        QStringList items;
        for (const auto &item : value.items)
            items.append(item.isScalar() ? scalarText(item) : QStringLiteral("{…}"));
        return QLatin1Char('[') + items.join(QStringLiteral(", ")) + QLatin1Char(']');
    }
    case Type::Map:
        break;
    }
    return {};
}

void flatten(const config::ConfigValue &value, const QString &key, Hyperparameters &out)
{
    if (value.type == config::ConfigValue::Type::Map) {
        const QString prefix = key.endsWith(QLatin1Char('/')) ? key : key + QLatin1Char('.');
        for (const auto &[name, member] : value.members)
            flatten(member, prefix + QString::fromStdString(name), out);
        return;
    }
    out.insert(key, scalarText(value));
}

void addDocument(const QByteArray &text, const char *fileName, bool json, const QString &group, Hyperparameters &out,
                 QStringList *problems)
{
    if (text.trimmed().isEmpty())
        return;
    const auto tree = json ? config::parseJsonText(text.toStdString(), fileName)
                           : config::parseYamlText(text.toStdString(), fileName);
    if (!tree) {
        if (problems)
            problems->append(QString::fromStdString(tree.error().toString()));
        return;
    }
    if (tree->type != config::ConfigValue::Type::Map) {
        if (problems)
            problems->append(QStringLiteral("%1: expected a mapping at the top").arg(QLatin1String(fileName)));
        return;
    }
    flatten(*tree, group + QLatin1Char('/'), out);
}

QByteArray readOptional(const QString &runDirectory, const char *name, QStringList *problems)
{
    const QString path = QDir(runDirectory).filePath(QLatin1String(name));
    if (!QFileInfo(path).isSymLink() && !QFileInfo::exists(path))
        return {};
    const auto text = rundir::readRunFile(runDirectoryPath(runDirectory), name, kMaximumHyperparametersBytes);
    if (!text) {
        if (problems)
            problems->append(QString::fromStdString(text.error().toString()));
        return {};
    }
    return QByteArray::fromStdString(*text);
}

} // namespace

Hyperparameters hyperparametersFromTexts(const QByteArray &trackerConfigJson, const QByteArray &jobYaml,
                                         const QByteArray &clusterYaml, QStringList *problems)
{
    Hyperparameters out;
    addDocument(trackerConfigJson, rundir::file::Hyperparameters, true, QStringLiteral("config"), out, problems);
    addDocument(jobYaml, rundir::file::Job, false, QStringLiteral("job"), out, problems);
    addDocument(clusterYaml, rundir::file::ClusterConfig, false, QStringLiteral("cluster"), out, problems);
    return out;
}

Hyperparameters readHyperparameters(const QString &runDirectory, QStringList *problems)
{
    return hyperparametersFromTexts(readOptional(runDirectory, rundir::file::Hyperparameters, problems),
                                    readOptional(runDirectory, rundir::file::Job, problems),
                                    readOptional(runDirectory, rundir::file::ClusterConfig, problems), problems);
}

double hyperparameterNumber(const QString &text)
{
    bool ok = false;
    const double value = text.trimmed().toDouble(&ok);
    return ok ? value : std::nan("");
}

QStringList differingKeys(const QList<Hyperparameters> &runs)
{
    QStringList keys;
    if (runs.size() < 2)
        return keys;
    QStringList all;
    for (const Hyperparameters &run : runs)
        all += run.keys();
    all.removeDuplicates();
    all.sort();
    for (const QString &key : std::as_const(all)) {
        const auto first = runs.first().constFind(key);
        for (qsizetype i = 1; i < runs.size(); ++i) {
            const auto other = runs[i].constFind(key);
            const bool firstHas = first != runs.first().constEnd();
            const bool otherHas = other != runs[i].constEnd();
            if (firstHas != otherHas || (firstHas && *first != *other)) {
                keys.append(key);
                break;
            }
        }
    }
    return keys;
}

} // namespace accel::monitor
