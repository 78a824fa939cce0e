#include "app/studio/screenshot.h"

#include "app/studio/bigmodel/bigmodelspage.h"
#include "app/studio/cluster/clustersection.h"
#include "app/studio/cluster/slurmqueuepanel.h"
#include "app/studio/configwizard.h"
#include "app/studio/fp8/fp8comparedialog.h"
#include "app/studio/hardwarepage.h"
#include "app/studio/mainwindow.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/runspage.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QPixmap>
#include <QPointer>
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>

#include <cstdio>
#include <functional>
#include <memory>

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

// Grabs `widget` once `settled` holds (polled every 200 ms, at most `timeoutMs`), then quits.
void grabWhen(QWidget *widget, int &exitCode, const QString &pngPath, const std::function<bool()> &settled,
              int timeoutMs, int delayMs = 300)
{
    auto *timer = new QTimer(widget);
    auto waited = std::make_shared<int>(0);
    QObject::connect(timer, &QTimer::timeout, widget, [=, &exitCode] {
        *waited += timer->interval();
        if (!settled() && *waited < timeoutMs)
            return;
        timer->stop();
        if (*waited >= timeoutMs)
            std::fprintf(stderr, "accel-studio: the view did not settle in %d s; pictured as it is\n",
                         timeoutMs / 1000);
        grabLater(widget, exitCode, pngPath, delayMs);
    });
    timer->start(200);
}

// The Hardware page's Cluster tab. ACCEL_STUDIO_SCREENSHOT_SLURM_HOST names the SLURM login node
// its queue panel reads (ACCEL_STUDIO_SCREENSHOT_SLURM_ENV: KEY=VALUE;... for the SLURM commands
// there); the hosts the tab remembers are checked. Pictured when both answers are shown.
std::function<bool()> showCluster(MainWindow &window)
{
    window.showPage(Page::Hardware);
    HardwarePage *hardware = window.hardwarePage();
    hardware->showCluster();
    QPointer<ClusterSection> cluster = hardware->clusterSection();
    QPointer<SlurmQueuePanel> panel = cluster->findChild<SlurmQueuePanel *>();
    if (const QString host = qEnvironmentVariable("ACCEL_STUDIO_SCREENSHOT_SLURM_HOST"); panel && !host.isEmpty()) {
        panel->setLoginHost(host);
        panel->setRemoteEnvironment(
            qEnvironmentVariable("ACCEL_STUDIO_SCREENSHOT_SLURM_ENV").split(QLatin1Char(';'), Qt::SkipEmptyParts));
        panel->refresh();
    }
    if (!cluster->hosts().isEmpty())
        cluster->checkHosts();
    return [cluster, panel, hardware] {
        return cluster && !cluster->isBusy() && (!panel || !panel->isBusy()) && !hardware->isDetecting();
    };
}

// The Monitor's tab of that title (the Runs page shows the run of ACCEL_STUDIO_SCREENSHOT_RUN).
void showMonitorTab(MainWindow &window, const QString &title)
{
    window.showPage(Page::Runs);
    for (QTabWidget *tabs : window.runsPage()->findChildren<QTabWidget *>()) {
        for (int i = 0; i < tabs->count(); ++i) {
            if (tabs->tabText(i).remove(QLatin1Char('&')) == title)
                tabs->setCurrentIndex(i);
        }
    }
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
    // ACCEL_STUDIO_SCREENSHOT_RUN=<run id>: the Runs page shows that run instead of the newest; a
    // remote run's address (ssh://HOST/dir) is selected once its host has listed it, with the list.
    // Several ids separated by commas are compared (selected together).
    const QString run = qEnvironmentVariable("ACCEL_STUDIO_SCREENSHOT_RUN");
    const bool remoteRun = run.startsWith(QLatin1String("ssh://"));
    const QString view = qEnvironmentVariable("ACCEL_STUDIO_SCREENSHOT_VIEW");
    if (!run.isEmpty() && !remoteRun) {
        QStringList runs;
        for (const QString &id : run.split(QLatin1Char(','), Qt::SkipEmptyParts))
            runs.append(QDir(window.runsPage()->runsRoot()).filePath(id.trimmed()));
        window.runsPage()->selectRuns(runs);
        window.runsPage()->setRunListVisible(false);
    }
    window.show();
    if (view == QLatin1String("runstable")) {
        // The runs table with its hyperparameter columns taking most of the page (once laid out).
        window.showPage(Page::Runs);
        window.runsPage()->setRunListVisible(true);
        QApplication::processEvents();
        window.runsPage()->setRunListHeight(window.runsPage()->height() * 11 / 20);
    }
    if (view == QLatin1String("panels")) {
        // Every panel of the run: the tables under the charts at their smallest (a tall window).
        for (QSplitter *splitter : window.runsPage()->monitorPage()->findChildren<QSplitter *>())
            splitter->setSizes({100000, 0});
    }
    int exitCode = 1;
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
    } else if (view == QLatin1String("fp8compare")) {
        // Tools > Compare FP8 Recipes after a real comparison: ACCEL_STUDIO_SCREENSHOT_FP8 gives
        // "SHAPES:STEPS" (default gpt-tiny:100), every precision; pictured when it has finished.
        const QStringList spec =
            qEnvironmentVariable("ACCEL_STUDIO_SCREENSHOT_FP8", QStringLiteral("gpt-tiny:100")).split(QLatin1Char(':'));
        auto *dialog = new Fp8CompareDialog(&window);
        Fp8ComparisonOptions options;
        options.shapes = spec.value(0).split(QLatin1Char(','), Qt::SkipEmptyParts);
        options.steps = spec.value(1, QStringLiteral("100")).toInt();
        options.precisions = fp8BenchPrecisions();
        dialog->setOptions(options);
        dialog->resize(1024, 700); // the small screen the studio must fit
        dialog->show();
        QObject::connect(dialog, &Fp8CompareDialog::finished, dialog, [dialog, &exitCode, pngPath](bool succeeded) {
            if (succeeded) {
                grabLater(dialog, exitCode, pngPath, 500);
                return;
            }
            std::fprintf(stderr, "accel-studio: the FP8 comparison failed: %s\n", qPrintable(dialog->statusText()));
            QApplication::exit(1);
        });
        if (!dialog->run()) {
            std::fprintf(stderr, "accel-studio: the FP8 comparison did not start: %s\n",
                         qPrintable(dialog->statusText()));
            return 1;
        }
        QApplication::exec();
        return exitCode;
    } else if (remoteRun) {
        RunsPage *runs = window.runsPage();
        const QStringList wanted{run};
        const auto listed = [runs, wanted] {
            if (runs->selectedRuns() != wanted)
                runs->selectRuns(wanted);
            return runs->selectedRuns() == wanted;
        };
        grabWhen(&window, exitCode, pngPath, listed, 60000, 3000); // then the monitor reads it over SSH
        QApplication::exec();
        return exitCode;
    } else if (view == QLatin1String("cluster")) {
        grabWhen(&window, exitCode, pngPath, showCluster(window), 90000);
        QApplication::exec();
        return exitCode;
    } else if (view == QLatin1String("memory")) {
        showMonitorTab(window, QStringLiteral("Memory"));
        delayMs = 4000; // the prediction is one `accel estimate-memory` run
    } else if (!view.isEmpty() && view != QLatin1String("runstable") && view != QLatin1String("panels")) {
        std::fprintf(stderr,
                     "accel-studio: ACCEL_STUDIO_SCREENSHOT_VIEW '%s' is not wizard, playground, fp8compare, cluster, "
                     "memory, runstable or panels\n",
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
