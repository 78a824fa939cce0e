// accel runs: the runs under the runs root with their state (a run whose supervisor died — pid +
// start time no longer match — is reported, and recorded, as "lost"), and the actions on one run:
// show, diff, open here; rename, notes, tag, export and delete in cmd_runs_manage.cpp.
#include "app/cli/cmd_runs.h"

#include "app/cli/command.h"

#include "core/bigmodel/memorysize.h"
#include "core/rundir/shmsegments.h"
#include "launcher/jsonoutput.h"
#include "launcher/rundirectory.h"
#include "monitor/runannotations.h"
#include "monitor/runcatalogue.h"
#include "monitor/runhyperparameters.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QStandardPaths>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace accel::cli {

using namespace accel::launcher;

namespace runs {

void addCommonOptions(ArgParser &parser)
{
    parser.addValue("runs_root", "DIR", "folder holding run directories",
                    RunDirectory::defaultRunsRoot().toStdString());
    parser.addFlag("json", "machine-readable output");
}

std::optional<int> parseOrExit(ArgParser &parser, int argc, char **argv)
{
    // Options may follow the runs ("accel runs tag RUN a b --runs_root DIR"): they are moved in
    // front, so that the positionals that take several values do not swallow them. After "--"
    // everything is a positional.
    static const std::vector<std::string> valueOptions = {"--runs_root", "--runs-root", "--output",
                                                          "-o",          "--limit",     "--tag"};
    std::vector<std::string> options, positionals;
    bool onlyPositionals = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (onlyPositionals || arg.size() < 2 || arg[0] != '-') {
            positionals.push_back(arg);
            continue;
        }
        if (arg == "--") {
            onlyPositionals = true;
            continue;
        }
        options.push_back(arg);
        const bool takesValue = std::find(valueOptions.begin(), valueOptions.end(), arg) != valueOptions.end();
        if (takesValue && i + 1 < argc)
            options.emplace_back(argv[++i]);
    }
    options.emplace_back("--");
    options.insert(options.end(), positionals.begin(), positionals.end());
    if (parser.parse(options))
        return std::nullopt;
    if (parser.helpRequested()) {
        std::fputs(parser.helpText().c_str(), stdout);
        return ExitOk;
    }
    // argv[0] is "runs" (the listing) or the action's name.
    const std::string command = std::strcmp(argv[0], "runs") ? std::string("accel runs ") + argv[0] : "accel runs";
    std::fprintf(stderr, "%s: %s\n", command.c_str(), parser.error().c_str());
    return ExitBadInput;
}

QString runsRoot(const ArgParser &parser)
{
    return QString::fromStdString(parser.valueOr("runs_root", RunDirectory::defaultRunsRoot().toStdString()));
}

std::optional<RunDirectory> openRun(const char *action, const QString &run, const QString &root)
{
    auto opened = RunDirectory::open(run, root);
    if (!opened) {
        std::fprintf(stderr, "accel runs %s: %s\n", action, opened.error().toString().c_str());
        return std::nullopt;
    }
    return std::move(*opened);
}

void printJson(const QString &schema, const QJsonObject &body)
{
    std::fputs(schemaJson(schema, 1, body).constData(), stdout);
}

QString absolutePath(const RunDirectory &run)
{
    return QFileInfo(run.path()).absoluteFilePath();
}

QString sizeText(qint64 bytes)
{
    return QString::fromStdString(bigmodel::formatBinarySize(static_cast<uint64_t>(std::max<qint64>(0, bytes))));
}

} // namespace runs

namespace {

using namespace accel::cli::runs;

QJsonObject annotationFields(const monitor::RunAnnotations &annotations)
{
    return QJsonObject{{QStringLiteral("display_name"), annotations.displayName},
                       {QStringLiteral("notes"), annotations.notes},
                       {QStringLiteral("tags"), QJsonArray::fromStringList(annotations.tags)}};
}

monitor::RunAnnotations annotationsOf(const RunDirectory &run)
{
    return monitor::readRunAnnotations(run.path()).value_or(monitor::RunAnnotations{});
}

QString displayName(const RunDirectory &run, const monitor::RunAnnotations &annotations)
{
    if (!annotations.displayName.isEmpty())
        return annotations.displayName;
    const QString name = run.manifest().value(QStringLiteral("name")).toString();
    return name.isEmpty() ? run.id() : name;
}

int runList(int argc, char **argv)
{
    ArgParser parser("accel runs", "List runs (newest first) with their state, display name and tags.");
    addCommonOptions(parser);
    parser.addValue("limit", "N", "show at most N runs (0: all)", "0");
    parser.addOption({"tag", "TAG", "only runs with this tag (repeatable: all of them)", "", 0, true, {}});
    if (const auto exit = parseOrExit(parser, argc, argv))
        return *exit;
    const QString root = runsRoot(parser);
    const int limit = std::atoi(parser.valueOr("limit", "0").c_str());
    QStringList wanted;
    for (const std::string &tag : parser.values("tag"))
        wanted.append(QString::fromStdString(tag).trimmed());
    struct Entry {
        RunDirectory run;
        QString state;
        double created = 0;
        monitor::RunAnnotations annotations;
    };
    std::vector<Entry> entries;
    for (const QString &name : QDir(root).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        auto run = RunDirectory::open(root + QLatin1Char('/') + name, root);
        if (!run)
            continue;
        monitor::RunAnnotations annotations = annotationsOf(*run);
        if (!std::all_of(wanted.begin(), wanted.end(), [&](const QString &t) { return annotations.tags.contains(t); }))
            continue;
        const QString state = run->effectiveState(true);
        const double created = run->manifest().value(QStringLiteral("created")).toDouble();
        entries.push_back({std::move(*run), state, created, std::move(annotations)});
    }
    std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) { return a.created > b.created; });
    if (limit > 0 && entries.size() > static_cast<size_t>(limit))
        entries.resize(static_cast<size_t>(limit));

    if (parser.isSet("json")) {
        QJsonArray list;
        for (const Entry &entry : entries) {
            const QJsonObject &m = entry.run.manifest();
            const QJsonObject settings = m.value(QStringLiteral("settings")).toObject();
            QJsonObject row{{QStringLiteral("id"), entry.run.id()},
                            {QStringLiteral("path"), entry.run.path()},
                            {QStringLiteral("name"), m.value(QStringLiteral("name"))},
                            {QStringLiteral("state"), entry.state},
                            {QStringLiteral("created"), entry.created},
                            {QStringLiteral("host"), m.value(QStringLiteral("host"))},
                            {QStringLiteral("launcher"), settings.value(QStringLiteral("launcher"))},
                            {QStringLiteral("num_processes"), settings.value(QStringLiteral("num_processes"))},
                            {QStringLiteral("restarts"), m.value(QStringLiteral("restarts"))},
                            {QStringLiteral("exit_code"), m.value(QStringLiteral("exit_code"))}};
            const QJsonObject annotations = annotationFields(entry.annotations);
            for (auto it = annotations.begin(); it != annotations.end(); ++it)
                row.insert(it.key(), it.value());
            list.append(row);
        }
        printJson(QLatin1String(monitor::RunsListingSchema),
                  {{QStringLiteral("runs_root"), root}, {QStringLiteral("runs"), list}});
        return ExitOk;
    }
    if (entries.empty()) {
        std::printf("no runs under %s\n", root.toLocal8Bit().constData());
        return ExitOk;
    }
    std::printf("%-44s %-11s %5s %5s  %-19s  %s\n", "RUN", "STATE", "RANKS", "EXIT", "CREATED", "NAME");
    for (const Entry &entry : entries) {
        const QJsonObject &m = entry.run.manifest();
        const QJsonValue exit = m.value(QStringLiteral("exit_code"));
        const QString created = QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(entry.created * 1000))
                                    .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
        QString name = displayName(entry.run, entry.annotations);
        if (!entry.annotations.tags.isEmpty())
            name += QStringLiteral(" [%1]").arg(entry.annotations.tags.join(QStringLiteral(", ")));
        std::printf("%-44s %-11s %5d %5s  %s  %s\n", entry.run.id().toLocal8Bit().constData(),
                    entry.state.toLocal8Bit().constData(),
                    m.value(QStringLiteral("settings")).toObject().value(QStringLiteral("local_processes")).toInt(),
                    exit.isDouble() ? QByteArray::number(exit.toInt()).constData() : "-",
                    created.toLocal8Bit().constData(), name.toLocal8Bit().constData());
    }
    return ExitOk;
}

int runShow(int argc, char **argv)
{
    ArgParser parser("accel runs show", "A run's state, display name, notes, tags and hyperparameters.");
    parser.addPositional({"run", "run directory, id or unique part of an id"});
    addCommonOptions(parser);
    if (const auto exit = parseOrExit(parser, argc, argv))
        return *exit;
    auto run = openRun("show", QString::fromStdString(*parser.firstPositional("run")), runsRoot(parser));
    if (!run)
        return ExitBadInput;
    const QString state = run->effectiveState(true);
    const monitor::RunAnnotations annotations = annotationsOf(*run);
    QStringList problems;
    const monitor::Hyperparameters hyperparameters = monitor::readHyperparameters(run->path(), &problems);
    if (parser.isSet("json")) {
        QJsonObject values;
        for (auto it = hyperparameters.cbegin(); it != hyperparameters.cend(); ++it)
            values.insert(it.key(), it.value());
        QJsonObject body = annotationFields(annotations);
        body.insert(QStringLiteral("run"), absolutePath(*run));
        body.insert(QStringLiteral("id"), run->id());
        body.insert(QStringLiteral("name"), run->manifest().value(QStringLiteral("name")));
        body.insert(QStringLiteral("state"), state);
        body.insert(QStringLiteral("created"), run->manifest().value(QStringLiteral("created")));
        body.insert(QStringLiteral("hyperparameters"), values);
        body.insert(QStringLiteral("problems"), QJsonArray::fromStringList(problems));
        printJson(QStringLiteral("accel.runs-show"), body);
        return ExitOk;
    }
    std::printf("run    %s\nfolder %s\nname   %s\nstate  %s\n", qPrintable(run->id()), qPrintable(absolutePath(*run)),
                qPrintable(displayName(*run, annotations)), qPrintable(state));
    if (!annotations.tags.isEmpty())
        std::printf("tags   %s\n", qPrintable(annotations.tags.join(QStringLiteral(", "))));
    if (!annotations.notes.isEmpty())
        std::printf("notes  %s\n",
                    qPrintable(QString(annotations.notes).replace(QLatin1Char('\n'), QStringLiteral("\n       "))));
    qsizetype width = 0;
    for (const QString &key : hyperparameters.keys())
        width = std::max(width, key.size());
    std::printf(hyperparameters.isEmpty() ? "no hyperparameters (hparams.json, job.yaml, cluster.yaml)\n"
                                          : "hyperparameters:\n");
    for (auto it = hyperparameters.cbegin(); it != hyperparameters.cend(); ++it)
        std::printf("  %-*s  %s\n", int(width), qPrintable(it.key()), qPrintable(it.value()));
    for (const QString &problem : std::as_const(problems))
        std::fprintf(stderr, "accel runs show: %s\n", qPrintable(problem));
    return ExitOk;
}

int runDiff(int argc, char **argv)
{
    ArgParser parser("accel runs diff", "The hyperparameters that differ between runs (config/: hparams.json, "
                                        "job/: job.yaml, cluster/: cluster.yaml).");
    parser.addPositional({"runs", "two or more runs (directories, ids or unique parts of ids)", false, true});
    addCommonOptions(parser);
    parser.addFlag("all", "every hyperparameter, also those that are the same");
    if (const auto exit = parseOrExit(parser, argc, argv))
        return *exit;
    const QString root = runsRoot(parser);
    const std::vector<std::string> names = parser.positional("runs");
    if (names.size() < 2) {
        std::fprintf(stderr, "accel runs diff: give two runs or more, got %zu\n", names.size());
        return ExitBadInput;
    }
    std::vector<RunDirectory> opened;
    QList<monitor::Hyperparameters> values;
    for (const std::string &name : names) {
        auto run = openRun("diff", QString::fromStdString(name), root);
        if (!run)
            return ExitBadInput;
        QStringList problems;
        values.append(monitor::readHyperparameters(run->path(), &problems));
        for (const QString &problem : std::as_const(problems))
            std::fprintf(stderr, "accel runs diff: %s\n", qPrintable(problem));
        opened.push_back(std::move(*run));
    }
    QStringList keys = monitor::differingKeys(values);
    if (parser.isSet("all")) {
        keys.clear();
        for (const auto &run : std::as_const(values))
            keys += run.keys();
        keys.removeDuplicates();
        keys.sort();
    }
    if (parser.isSet("json")) {
        QJsonArray runList, rows;
        for (const RunDirectory &run : opened)
            runList.append(QJsonObject{{QStringLiteral("id"), run.id()},
                                       {QStringLiteral("path"), absolutePath(run)},
                                       {QStringLiteral("display_name"), displayName(run, annotationsOf(run))}});
        for (const QString &key : std::as_const(keys)) {
            QJsonArray cells;
            for (const auto &run : std::as_const(values))
                cells.append(run.contains(key) ? QJsonValue(run.value(key)) : QJsonValue());
            rows.append(QJsonObject{{QStringLiteral("key"), key}, {QStringLiteral("values"), cells}});
        }
        printJson(QStringLiteral("accel.runs-diff"),
                  {{QStringLiteral("runs"), runList}, {QStringLiteral("keys"), rows}});
        return ExitOk;
    }
    if (keys.isEmpty()) {
        std::printf("the runs have the same hyperparameters\n");
        return ExitOk;
    }
    qsizetype width = 3;
    for (const QString &key : std::as_const(keys))
        width = std::max(width, key.size());
    std::printf("%-*s", int(width), "KEY");
    for (const RunDirectory &run : opened)
        std::printf("  %s", qPrintable(displayName(run, annotationsOf(run))));
    std::printf("\n");
    for (const QString &key : std::as_const(keys)) {
        std::printf("%-*s", int(width), qPrintable(key));
        for (const auto &run : std::as_const(values))
            std::printf("  %s", run.contains(key) ? qPrintable(run.value(key)) : "-");
        std::printf("\n");
    }
    return ExitOk;
}

int runOpen(int argc, char **argv)
{
    ArgParser parser("accel runs open", "Prints the run's folder and opens it in the desktop's file manager "
                                        "(xdg-open) when there is a desktop.");
    parser.addPositional({"run", "run directory, id or unique part of an id"});
    addCommonOptions(parser);
    if (const auto exit = parseOrExit(parser, argc, argv))
        return *exit;
    auto run = openRun("open", QString::fromStdString(*parser.firstPositional("run")), runsRoot(parser));
    if (!run)
        return ExitBadInput;
    const bool desktop = !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
    const QString opener = QStandardPaths::findExecutable(QStringLiteral("xdg-open"));
    const QString folder = absolutePath(*run);
    const bool opened = desktop && !opener.isEmpty() && QProcess::startDetached(opener, {folder});
    if (parser.isSet("json")) {
        printJson(
            QStringLiteral("accel.runs-open"),
            {{QStringLiteral("run"), folder}, {QStringLiteral("id"), run->id()}, {QStringLiteral("opened"), opened}});
        return ExitOk;
    }
    std::printf("%s\n", qPrintable(folder));
    return ExitOk;
}

void printUsage(FILE *out)
{
    std::fputs("usage: accel runs [list] [--runs_root DIR] [--limit N] [--tag TAG] [--json]\n"
               "       accel runs <action> RUN ... ('accel runs <action> --help' for each)\n\n"
               "RUN is a run directory, a run id or a unique part of one (under --runs_root).\n\n"
               "actions:\n"
               "  list                       the runs, newest first, with their state (the default)\n"
               "  show RUN                   state, display name, notes, tags and hyperparameters\n"
               "  diff RUN RUN...            the hyperparameters that differ between runs\n"
               "  rename RUN NAME            the display name (\"\" goes back to run.json's name)\n"
               "  notes RUN TEXT             the run's notes (- reads them from standard input)\n"
               "  tag RUN TAG... [--remove]  add (or remove) tags\n"
               "  open RUN                   print the run's folder, open it on a desktop\n"
               "  export RUN [-o FILE]       the run as one .tar.gz archive (checkpoints with --checkpoints)\n"
               "  delete RUN... [--yes]      delete runs with their files (asks unless --yes)\n",
               out);
}

int runRuns(int argc, char **argv)
{
    // Segments of runs whose every process was killed at once (reaper included) go at the next
    // `accel launch` or `accel runs` (core/rundir/shmsegments.h).
    if (const int removed = rundir::removeSegmentsOfDeadProcesses(); removed > 0)
        std::fprintf(stderr,
                     "accel runs: note: removed %d shared-memory segment(s) of processes that no longer exist\n",
                     removed);
    if (argc >= 2 && argv[1][0] != '-') {
        const char *action = argv[1];
        struct Action {
            const char *name;
            int (*run)(int, char **);
        };
        static const Action actions[] = {{"list", runList}, {"show", runShow},         {"diff", runDiff},
                                         {"open", runOpen}, {"rename", rename},        {"notes", notes},
                                         {"tag", tag},      {"export", exportArchive}, {"delete", remove}};
        for (const Action &a : actions) {
            if (!std::strcmp(action, a.name))
                return a.run(argc - 1, argv + 1);
        }
        std::fprintf(stderr,
                     "accel runs: unknown action '%s': expected list, show, diff, rename, notes, tag, open, "
                     "export or delete\n\n",
                     action);
        printUsage(stderr);
        return ExitBadInput;
    }
    if (argc >= 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
        printUsage(stdout);
        return ExitOk;
    }
    return runList(argc, argv);
}

} // namespace

static Registrar registrar({"runs", "list runs; show, diff, rename, annotate, tag, export or delete one", &runRuns});

} // namespace accel::cli
