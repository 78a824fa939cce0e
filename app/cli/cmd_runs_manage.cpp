// accel runs rename / notes / tag / export / delete: what people do with a run after it ran. The
// display name, notes and tags go to the run's annotations.json (monitor/runannotations.h; run.json
// stays the supervisor's); export writes the run as one .tar.gz and delete removes its folder,
// both through monitor/runfolder.h, the code the studio uses too.
#include "app/cli/cmd_runs.h"

#include "app/cli/command.h"

#include "launcher/rundirectory.h"
#include "monitor/runannotations.h"
#include "monitor/runfolder.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QTextStream>

#include <cstdio>
#include <functional>
#include <unistd.h>

namespace accel::cli::runs {

using namespace accel::launcher;

namespace {

// Reads, changes and writes a run's annotations, then prints them.
int changeAnnotations(const char *action, const ArgParser &parser,
                      const std::function<Result<void>(monitor::RunAnnotations &)> &change)
{
    auto run = openRun(action, QString::fromStdString(*parser.firstPositional("run")), runsRoot(parser));
    if (!run)
        return ExitBadInput;
    auto annotations = monitor::readRunAnnotations(absolutePath(*run));
    if (!annotations) {
        std::fprintf(stderr, "accel runs %s: %s\n", action, annotations.error().toString().c_str());
        return exitCodeFor(annotations.error());
    }
    if (auto changed = change(*annotations); !changed) {
        std::fprintf(stderr, "accel runs %s: %s\n", action, changed.error().toString().c_str());
        return exitCodeFor(changed.error());
    }
    if (auto written = monitor::writeRunAnnotations(absolutePath(*run), *annotations); !written) {
        std::fprintf(stderr, "accel runs %s: %s\n", action, written.error().toString().c_str());
        return ExitFailure;
    }
    if (parser.isSet("json")) {
        QJsonObject body = monitor::annotationsToJson(*annotations);
        body.remove(QStringLiteral("schema"));
        body.remove(QStringLiteral("version"));
        body.insert(QStringLiteral("run"), absolutePath(*run));
        body.insert(QStringLiteral("id"), run->id());
        printJson(QStringLiteral("accel.run-annotations"), body);
        return ExitOk;
    }
    const QString name = annotations->displayName.isEmpty()
                             ? run->manifest().value(QStringLiteral("name")).toString() + QStringLiteral(" (run.json)")
                             : annotations->displayName;
    std::printf("%s: name %s; tags %s; notes %s\n", qPrintable(run->id()), qPrintable(name),
                annotations->tags.isEmpty() ? "none" : qPrintable(annotations->tags.join(QStringLiteral(", "))),
                annotations->notes.isEmpty()
                    ? "none"
                    : qPrintable(QStringLiteral("%1 characters").arg(annotations->notes.size())));
    return ExitOk;
}

} // namespace

int rename(int argc, char **argv)
{
    ArgParser parser("accel runs rename", "Gives a run a display name (shown by accel runs and the studio in "
                                          "place of run.json's name; \"\" goes back to it).");
    parser.addPositional({"run", "run directory, id or unique part of an id"});
    parser.addPositional({"name", "the new name (one line, at most 200 characters)"});
    addCommonOptions(parser);
    if (const auto exit = parseOrExit(parser, argc, argv))
        return *exit;
    const QString typed = QString::fromStdString(*parser.firstPositional("name"));
    return changeAnnotations("rename", parser, [&](monitor::RunAnnotations &annotations) -> Result<void> {
        auto name = monitor::checkDisplayName(typed);
        if (!name)
            return tl::unexpected(name.error());
        annotations.displayName = *name;
        return {};
    });
}

int notes(int argc, char **argv)
{
    ArgParser parser("accel runs notes", "Sets a run's notes (free text; - reads it from standard input, \"\" "
                                         "clears it).");
    parser.addPositional({"run", "run directory, id or unique part of an id"});
    parser.addPositional({"text", "the notes, or - for standard input"});
    addCommonOptions(parser);
    if (const auto exit = parseOrExit(parser, argc, argv))
        return *exit;
    QString text = QString::fromStdString(*parser.firstPositional("text"));
    if (text == QLatin1String("-")) {
        QFile in;
        if (!in.open(stdin, QIODevice::ReadOnly)) {
            std::fprintf(stderr, "accel runs notes: cannot read standard input\n");
            return ExitFailure;
        }
        text = QString::fromUtf8(in.readAll());
    }
    return changeAnnotations("notes", parser, [&](monitor::RunAnnotations &annotations) -> Result<void> {
        annotations.notes = text.trimmed();
        return {};
    });
}

int tag(int argc, char **argv)
{
    ArgParser parser("accel runs tag", "Adds tags to a run (or removes them with --remove).");
    parser.addPositional({"run", "run directory, id or unique part of an id"});
    parser.addPositional({"tags", "one or more tags (no commas, at most 64 characters each)", false, true});
    addCommonOptions(parser);
    parser.addFlag("remove", "remove these tags instead of adding them");
    if (const auto exit = parseOrExit(parser, argc, argv))
        return *exit;
    const bool removing = parser.isSet("remove");
    const std::vector<std::string> typed = parser.positional("tags");
    return changeAnnotations("tag", parser, [&](monitor::RunAnnotations &annotations) -> Result<void> {
        for (const std::string &text : typed) {
            auto tag = monitor::checkTag(QString::fromStdString(text));
            if (!tag)
                return tl::unexpected(tag.error());
            if (removing)
                annotations.tags.removeAll(*tag);
            else if (!annotations.tags.contains(*tag))
                annotations.tags.append(*tag);
        }
        return {};
    });
}

int exportArchive(int argc, char **argv)
{
    ArgParser parser("accel runs export", "Writes a run as one self-contained .tar.gz (its folder with run.json, "
                                          "events, logs, metrics, configs, hyperparameters and annotations; `tar "
                                          "xzf` gives back a run directory that accel and the studio open).");
    parser.addPositional({"run", "run directory, id or unique part of an id"});
    addCommonOptions(parser);
    parser.addOption({"output", "FILE", "the archive (default: ./<run id>.tar.gz)", "", 'o', false, {}});
    parser.addFlag("checkpoints", "include checkpoints/ (left out by default: it can be many gigabytes)");
    if (const auto exit = parseOrExit(parser, argc, argv))
        return *exit;
    auto run = openRun("export", QString::fromStdString(*parser.firstPositional("run")), runsRoot(parser));
    if (!run)
        return ExitBadInput;
    const QString output = parser.isSet("output")
                               ? QString::fromStdString(*parser.value("output"))
                               : QDir::current().filePath(monitor::defaultArchiveName(absolutePath(*run)));
    monitor::ExportOptions options;
    options.checkpoints = parser.isSet("checkpoints");
    const auto summary = monitor::exportRunArchive(absolutePath(*run), output, options);
    if (!summary) {
        std::fprintf(stderr, "accel runs export: %s\n", summary.error().toString().c_str());
        return exitCodeFor(summary.error());
    }
    if (parser.isSet("json")) {
        printJson(QStringLiteral("accel.runs-export"),
                  {{QStringLiteral("run"), absolutePath(*run)},
                   {QStringLiteral("id"), run->id()},
                   {QStringLiteral("archive"), summary->archive},
                   {QStringLiteral("files"), summary->files},
                   {QStringLiteral("bytes"), double(summary->bytes)},
                   {QStringLiteral("archive_bytes"), double(summary->archiveBytes)},
                   {QStringLiteral("left_out_files"), summary->leftOutFiles},
                   {QStringLiteral("left_out_bytes"), double(summary->leftOutBytes)},
                   {QStringLiteral("skipped"), QJsonArray::fromStringList(summary->skipped)}});
        return ExitOk;
    }
    std::printf("%s: %d files, %s (%s compressed)\n", qPrintable(summary->archive), summary->files,
                qPrintable(sizeText(summary->bytes)), qPrintable(sizeText(summary->archiveBytes)));
    if (summary->leftOutFiles > 0)
        std::printf("left out: %d checkpoint files, %s (--checkpoints includes them)\n", summary->leftOutFiles,
                    qPrintable(sizeText(summary->leftOutBytes)));
    if (!summary->skipped.isEmpty())
        std::printf("skipped (symlinks or special files): %s\n",
                    qPrintable(summary->skipped.join(QStringLiteral(", "))));
    return ExitOk;
}

int remove(int argc, char **argv)
{
    ArgParser parser("accel runs delete", "Deletes runs with all their files. Asks for each on a terminal; "
                                          "--yes deletes without asking (needed when standard input is not a "
                                          "terminal). A live run is refused: stop it first.");
    parser.addPositional({"runs", "one or more runs (directories, ids or unique parts of ids)", false, true});
    addCommonOptions(parser);
    parser.addFlag("yes", "delete without asking", 'y');
    if (const auto exit = parseOrExit(parser, argc, argv))
        return *exit;
    const QString root = runsRoot(parser);
    std::vector<RunDirectory> runs;
    for (const std::string &name : parser.positional("runs")) {
        auto run = openRun("delete", QString::fromStdString(name), root);
        if (!run)
            return ExitBadInput;
        runs.push_back(std::move(*run));
    }
    const bool ask = !parser.isSet("yes");
    if (ask && !::isatty(STDIN_FILENO)) {
        std::fprintf(stderr, "accel runs delete: not deleting without --yes: standard input is not a terminal to "
                             "ask on\n");
        return ExitBadInput;
    }
    QJsonArray deleted;
    int exitCode = ExitOk;
    QTextStream in(stdin);
    for (RunDirectory &run : runs) {
        if (ask) {
            const auto contents = monitor::listRunFolder(absolutePath(run));
            std::fprintf(stderr, "Delete run %s with its %d files (%s) in %s? [y/N] ", qPrintable(run.id()),
                         contents ? contents->files : 0, qPrintable(sizeText(contents ? contents->bytes : 0)),
                         qPrintable(absolutePath(run)));
            std::fflush(stderr);
            const QString answer = in.readLine().trimmed().toLower();
            if (answer != QLatin1String("y") && answer != QLatin1String("yes")) {
                std::fprintf(stderr, "kept %s\n", qPrintable(run.id()));
                continue;
            }
        }
        run.effectiveState(true); // a dead supervisor's run reads (and is recorded) lost, so it can go
        const auto removed = monitor::deleteRunFolder(absolutePath(run));
        if (!removed) {
            std::fprintf(stderr, "accel runs delete: %s\n", removed.error().toString().c_str());
            exitCode = std::max(exitCode, exitCodeFor(removed.error()));
            continue;
        }
        deleted.append(QJsonObject{{QStringLiteral("id"), run.id()},
                                   {QStringLiteral("path"), absolutePath(run)},
                                   {QStringLiteral("files"), removed->files},
                                   {QStringLiteral("bytes"), double(removed->bytes)}});
        if (!parser.isSet("json"))
            std::printf("deleted %s (%d files, %s)\n", qPrintable(run.id()), removed->files,
                        qPrintable(sizeText(removed->bytes)));
    }
    if (parser.isSet("json"))
        printJson(QStringLiteral("accel.runs-delete"), {{QStringLiteral("deleted"), deleted}});
    return exitCode;
}

} // namespace accel::cli::runs
