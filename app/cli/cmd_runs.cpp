// accel runs: the runs under the runs root with their state. A run whose supervisor died
// (pid + start time no longer match) is reported, and recorded, as "lost".
#include "app/cli/argparser.h"
#include "app/cli/command.h"

#include "launcher/jsonoutput.h"
#include "launcher/rundirectory.h"

#include <QDateTime>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>

#include <algorithm>
#include <cstdio>

namespace accel::cli {

using namespace accel::launcher;

static int runRuns(int argc, char **argv)
{
    ArgParser parser("accel runs", "List runs (newest first) with their state.");
    parser.addValue("runs_root", "DIR", "folder holding run directories",
                    RunDirectory::defaultRunsRoot().toStdString());
    parser.addValue("limit", "N", "show at most N runs (0: all)", "0");
    parser.addFlag("json", "machine-readable output (accel.runs)");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel runs: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    const QString root =
        QString::fromStdString(parser.valueOr("runs_root", RunDirectory::defaultRunsRoot().toStdString()));
    const int limit = std::atoi(parser.valueOr("limit", "0").c_str());
    struct Entry {
        RunDirectory run;
        QString state;
        double created = 0;
    };
    std::vector<Entry> entries;
    for (const QString &name : QDir(root).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        auto run = RunDirectory::open(root + QLatin1Char('/') + name, root);
        if (!run)
            continue;
        const QString state = run->effectiveState(true);
        const double created = run->manifest().value(QStringLiteral("created")).toDouble();
        entries.push_back({std::move(*run), state, created});
    }
    std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) { return a.created > b.created; });
    if (limit > 0 && entries.size() > static_cast<size_t>(limit))
        entries.resize(static_cast<size_t>(limit));

    if (parser.isSet("json")) {
        QJsonArray runs;
        for (const Entry &entry : entries) {
            const QJsonObject &m = entry.run.manifest();
            const QJsonObject settings = m.value(QStringLiteral("settings")).toObject();
            runs.append(QJsonObject{{QStringLiteral("id"), entry.run.id()},
                                    {QStringLiteral("path"), entry.run.path()},
                                    {QStringLiteral("name"), m.value(QStringLiteral("name"))},
                                    {QStringLiteral("state"), entry.state},
                                    {QStringLiteral("created"), entry.created},
                                    {QStringLiteral("host"), m.value(QStringLiteral("host"))},
                                    {QStringLiteral("launcher"), settings.value(QStringLiteral("launcher"))},
                                    {QStringLiteral("num_processes"), settings.value(QStringLiteral("num_processes"))},
                                    {QStringLiteral("restarts"), m.value(QStringLiteral("restarts"))},
                                    {QStringLiteral("exit_code"), m.value(QStringLiteral("exit_code"))}});
        }
        const QJsonObject object{{QStringLiteral("schema"), QStringLiteral("accel.runs")},
                                 {QStringLiteral("version"), 1},
                                 {QStringLiteral("runs_root"), root},
                                 {QStringLiteral("runs"), runs}};
        std::printf("%s", schemaJson(object).constData());
        return ExitOk;
    }
    if (entries.empty()) {
        std::printf("no runs under %s\n", root.toLocal8Bit().constData());
        return ExitOk;
    }
    std::printf("%-44s %-11s %5s %5s  %s\n", "RUN", "STATE", "RANKS", "EXIT", "CREATED");
    for (const Entry &entry : entries) {
        const QJsonObject &m = entry.run.manifest();
        const QJsonValue exit = m.value(QStringLiteral("exit_code"));
        const QString created = QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(entry.created * 1000))
                                    .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
        std::printf("%-44s %-11s %5d %5s  %s\n", entry.run.id().toLocal8Bit().constData(),
                    entry.state.toLocal8Bit().constData(),
                    m.value(QStringLiteral("settings")).toObject().value(QStringLiteral("local_processes")).toInt(),
                    exit.isDouble() ? QByteArray::number(exit.toInt()).constData() : "-",
                    created.toLocal8Bit().constData());
    }
    return ExitOk;
}

static Registrar registrar({"runs", "list runs and their state", &runRuns});

} // namespace accel::cli
