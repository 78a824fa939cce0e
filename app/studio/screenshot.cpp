#include "app/studio/screenshot.h"

#include "app/studio/hardwarepage.h"
#include "app/studio/mainwindow.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QPixmap>
#include <QTimer>

#include <cstdio>

namespace accel::app {

int takeScreenshot(MainWindow &window, const QString &pngPath)
{
    window.resize(1280, 820);
    window.show();
    int exitCode = 1;
    auto grab = [&window, &exitCode, pngPath] {
        // Let layouts and deferred paints settle before rendering.
        QTimer::singleShot(300, &window, [&window, &exitCode, pngPath] {
            QDir().mkpath(QFileInfo(pngPath).absolutePath());
            const QPixmap pixmap = window.grab();
            if (pixmap.save(pngPath, "PNG")) {
                std::printf("accel-studio: wrote %s (%dx%d)\n", qPrintable(pngPath), pixmap.width(), pixmap.height());
                exitCode = 0;
            } else {
                std::fprintf(stderr, "accel-studio: cannot write screenshot '%s'\n", qPrintable(pngPath));
            }
            QApplication::quit();
        });
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
