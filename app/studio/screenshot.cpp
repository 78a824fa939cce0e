#include "app/studio/screenshot.h"

#include "app/studio/bigmodel/bigmodelspage.h"
#include "app/studio/configwizard.h"
#include "app/studio/hardwarepage.h"
#include "app/studio/mainwindow.h"
#include "app/studio/monitor/runspage.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QPixmap>
#include <QPointer>
#include <QTimer>

#include <cstdio>

namespace accel::app {

namespace {

// Renders `widget` to `pngPath` after layouts and deferred paints (and the monitor's first file
// reads) have settled, then quits the event loop.
void grabLater(QWidget *widget, int &exitCode, const QString &pngPath, int delayMs)
{
    QTimer::singleShot(delayMs, widget, [widget, &exitCode, pngPath] {
        QDir().mkpath(QFileInfo(pngPath).absolutePath());
        const QPixmap pixmap = widget->grab();
        if (pixmap.save(pngPath, "PNG")) {
            std::printf("accel-studio: wrote %s (%dx%d)\n", qPrintable(pngPath), pixmap.width(), pixmap.height());
            exitCode = 0;
        } else {
            std::fprintf(stderr, "accel-studio: cannot write screenshot '%s'\n", qPrintable(pngPath));
        }
        QApplication::quit();
    });
}

} // namespace

int takeScreenshot(MainWindow &window, const QString &pngPath)
{
    // ACCEL_STUDIO_SCREENSHOT_SIZE=WIDTHxHEIGHT (e.g. 1024x700) picks the window size.
    QSize size(1280, 820);
    if (const QString wanted = qEnvironmentVariable("ACCEL_STUDIO_SCREENSHOT_SIZE"); !wanted.isEmpty()) {
        const QStringList parts = wanted.split(QLatin1Char('x'));
        const int width = parts.value(0).toInt();
        const int height = parts.value(1).toInt();
        if (parts.size() != 2 || width < 320 || height < 240) {
            std::fprintf(stderr,
                         "accel-studio: ACCEL_STUDIO_SCREENSHOT_SIZE '%s' is not WIDTHxHEIGHT (at least 320x240)\n",
                         qPrintable(wanted));
            return 2;
        }
        size = QSize(width, height);
    }
    window.resize(size);
    // ACCEL_STUDIO_SCREENSHOT_RUN=<run id>: the Runs page shows that run instead of the newest.
    if (const QString run = qEnvironmentVariable("ACCEL_STUDIO_SCREENSHOT_RUN"); !run.isEmpty()) {
        window.runsPage()->selectRuns({QDir(window.runsPage()->runsRoot()).filePath(run)});
        window.runsPage()->setRunListVisible(false);
    }
    window.show();
    int exitCode = 1;
    const QString view = qEnvironmentVariable("ACCEL_STUDIO_SCREENSHOT_VIEW");
    QPointer<QWidget> target = &window;
    int delayMs = window.currentPage() == Page::Runs ? 1500 : 300; // the monitor reads the run's files first
    if (view == QLatin1String("playground")) {
        window.showPage(Page::BigModels);
        // The Playground is the Big Models page's tab of that name (when this build has it).
        if (auto *bigModels = window.findChild<BigModelsPage *>()) {
            for (int i = 0; i < bigModels->count(); ++i) {
                if (bigModels->tabText(i).contains(QLatin1String("Playground")))
                    bigModels->setCurrentIndex(i);
            }
        }
    } else if (view == QLatin1String("wizard")) {
        window.showPage(Page::Configure);
        auto *wizard = new ConfigWizard(&window);
        wizard->setAttribute(Qt::WA_DeleteOnClose);
        wizard->resize(960, 700);
        wizard->show();
        target = wizard;
        delayMs = 600;
    } else if (!view.isEmpty()) {
        std::fprintf(stderr, "accel-studio: ACCEL_STUDIO_SCREENSHOT_VIEW '%s' is not wizard or playground\n",
                     qPrintable(view));
        return 2;
    }
    auto grab = [target, &exitCode, pngPath, delayMs] {
        if (target)
            grabLater(target, exitCode, pngPath, delayMs);
    };
    // The Hardware page starts detecting when it is first shown, which some platforms deliver
    // only once the window is mapped; start it here so the picture shows the finished report.
    HardwarePage *hardware = window.hardwarePage();
    if (window.currentPage() == Page::Hardware && !hardware->hasReport())
        hardware->refresh();
    if (hardware->isDetecting())
        QObject::connect(hardware, &HardwarePage::detectionFinished, &window, grab, Qt::SingleShotConnection);
    else
        grab();
    QApplication::exec();
    return exitCode;
}

} // namespace accel::app
