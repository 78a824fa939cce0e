// accel-studio: the desktop app. It never links libtorch; training runs in accel-worker processes.
#include "app/studio/hardwarepage.h"
#include "app/studio/mainwindow.h"
#include "app/studio/screenshot.h"
#include "app/studio/studiooptions.h"

#include <QApplication>
#include <QTextStream>

#include <cstdio>

int main(int argc, char **argv)
{
    QApplication application(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("AccelStudio"));
    QApplication::setApplicationName(QStringLiteral("accel-studio"));
    QApplication::setApplicationVersion(QStringLiteral(ACCEL_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("accel-studio"));

    const auto parsed = accel::app::parseStudioOptions(QApplication::arguments());
    if (!parsed.error.isEmpty()) {
        std::fprintf(stderr, "accel-studio: %s\n%s", qPrintable(parsed.error), qPrintable(accel::app::studioUsage()));
        return 2;
    }
    const accel::app::StudioOptions &options = parsed.options;
    if (options.help) {
        std::fputs(qPrintable(accel::app::studioUsage()), stdout);
        return 0;
    }
    if (options.version) {
        std::printf("accel-studio %s\n", ACCEL_VERSION);
        return 0;
    }

    accel::app::MainWindow window;
    window.applyOptions(options);
    if (!options.screenshotFile.isEmpty())
        return accel::app::takeScreenshot(window, options.screenshotFile);
    window.show();
    return QApplication::exec();
}
