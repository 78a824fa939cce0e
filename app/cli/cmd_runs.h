// accel runs: the runs under a runs root and what people do with them. cmd_runs.cpp lists, shows,
// diffs and opens runs; cmd_runs_manage.cpp renames, annotates, tags, exports and deletes them.
// Every action takes the run as a directory, an id or a unique part of an id (--runs_root).
#pragma once

#include "app/cli/argparser.h"

#include <QJsonObject>
#include <QString>

#include <optional>

namespace accel::launcher {
class RunDirectory;
}

namespace accel::cli::runs {

// --runs_root and --json, which every action has.
void addCommonOptions(ArgParser &parser);
// Parses; on --help prints and returns ExitOk, on an error prints it and returns ExitBadInput.
std::optional<int> parseOrExit(ArgParser &parser, int argc, char **argv);
QString runsRoot(const ArgParser &parser);
// The run a RUN argument names, or an error printed as "accel runs ACTION: ..." (nullopt).
std::optional<launcher::RunDirectory> openRun(const char *action, const QString &run, const QString &root);
// Prints `body` as the JSON document `schema` version 1.
void printJson(const QString &schema, const QJsonObject &body);
// The run's folder as an absolute path (RUN may be given relative).
QString absolutePath(const launcher::RunDirectory &run);
// "12.5 MiB"
QString sizeText(qint64 bytes);

int rename(int argc, char **argv);
int notes(int argc, char **argv);
int tag(int argc, char **argv);
int exportArchive(int argc, char **argv);
int remove(int argc, char **argv);

} // namespace accel::cli::runs
