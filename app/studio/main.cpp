// accel-studio: the desktop app. It never links libtorch; training runs in accel-worker processes.
#include "app/studio/hardwarepage.h"
#include "app/studio/mainwindow.h"
#include "app/studio/screenshot.h"
#include "app/studio/studiooptions.h"
#include "app/studio/theme.h"
#include "core/common/log.h"

#include <QApplication>
#include <QLoggingCategory>
#include <QTextStream>

#include <cstdio>

Q_LOGGING_CATEGORY(lcCore, "accel.core")

// The Qt-free libraries log through accel::log; in the studio their lines go to Qt's logging
// (category accel.core, prefixed with the library's own category).
static void routeCoreLogging()
{
    accel::log::setSink([](accel::log::Level level, const std::string &category, const std::string &message) {
        const QString text =
            QStringLiteral("[%1] %2").arg(QString::fromStdString(category), QString::fromStdString(message));
        switch (level) {
        case accel::log::Level::Debug:
            qCDebug(lcCore).noquote() << text;
            break;
        case accel::log::Level::Info:
            qCInfo(lcCore).noquote() << text;
            break;
        case accel::log::Level::Warning:
            qCWarning(lcCore).noquote() << text;
            break;
        case accel::log::Level::Error:
            qCCritical(lcCore).noquote() << text;
            break;
        }
    });
}

namespace {

// Prints what --help, --version or a bad command line ask for; -1 when the window should open.
int answerWithoutWindow(const accel::app::StudioOptionsResult &parsed)
{
    if (!parsed.error.isEmpty()) {
        std::fprintf(stderr, "accel-studio: %s\n%s", qPrintable(parsed.error), qPrintable(accel::app::studioUsage()));
        return 2;
    }
    if (parsed.options.help) {
        std::fputs(qPrintable(accel::app::studioUsage()), stdout);
        return 0;
    }
    if (parsed.options.version) {
        std::printf("accel-studio %s\n", ACCEL_VERSION);
        return 0;
    }
    return -1;
}

} // namespace

int main(int argc, char **argv)
{
    // --help, --version and usage errors are answered before QApplication exists: creating it
    // needs a display, and a terminal on a headless node has none. Only a one-dash argument that
    // may be Qt's own (-platform, -style, ...) waits for QApplication to strip it.
    const auto early = accel::app::parseStudioOptions(accel::app::rawArguments(argc, argv));
    if (early.error.isEmpty() || !early.maybeQtOption) {
        if (const int code = answerWithoutWindow(early); code >= 0)
            return code;
    }

    QApplication application(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("AccelStudio"));
    QApplication::setApplicationName(QStringLiteral("accel-studio"));
    QApplication::setApplicationVersion(QStringLiteral(ACCEL_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("accel-studio"));
    routeCoreLogging();
    accel::app::rememberSystemTheme();

    const auto parsed = accel::app::parseStudioOptions(QApplication::arguments());
    if (const int code = answerWithoutWindow(parsed); code >= 0)
        return code;
    const accel::app::StudioOptions &options = parsed.options;

    accel::app::MainWindow window;
    window.applyOptions(options);
    if (!options.screenshotFile.isEmpty())
        return accel::app::takeScreenshot(window, options.screenshotFile);
    window.show();
    return QApplication::exec();
}
