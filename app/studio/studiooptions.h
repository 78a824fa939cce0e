// The studio's command line: accel-studio [--demo] [--page NAME] [--config FILE] [--theme NAME]
// [--screenshot FILE.png]. Parsed into a plain struct so that tests can check it without a window.
#pragma once

#include <QString>
#include <QStringList>

#include <optional>

namespace accel::app {

// The pages of the main window's sidebar, in sidebar order (Ctrl+1 .. Ctrl+5).
enum class Page { Hardware, Configure, Launch, Runs, BigModels };

constexpr int pageCount = 5;

// "hardware", "configure", "launch", "runs", "bigmodels".
QString pageName(Page page);
// "Hardware", "Configure", "Launch", "Runs", "Big Models".
QString pageTitle(Page page);
// Accepts the names above, case-insensitively, plus "big-models".
std::optional<Page> pageFromName(const QString &name);
QStringList pageNames();

struct StudioOptions {
    bool demo = false;
    std::optional<Page> page;
    QString configFile;
    QString screenshotFile;
    QString theme; // "system", "light" or "dark"; empty: the remembered choice
    bool help = false;
    bool version = false;
};

struct StudioOptionsResult {
    StudioOptions options;
    QString error; // empty when the command line is valid
    // The unknown argument has one dash (e.g. -platform, -style): it may be one of Qt's own GUI
    // options, which only QApplication knows and strips; parse again after creating it.
    bool maybeQtOption = false;
};

// `arguments` includes the program name (QCoreApplication::arguments(), or rawArguments()).
StudioOptionsResult parseStudioOptions(const QStringList &arguments);
// argv as QStrings, before any application object exists (so --help and --version need no display).
QStringList rawArguments(int argc, char **argv);
QString studioUsage();

} // namespace accel::app
