// The studio window opens, switches pages by shortcut, remembers its geometry, and the About
// versions come from the libraries it runs with.
#include "app/studio/aboutdialog.h"
#include "app/studio/configform.h"
#include "app/studio/configurepage.h"
#include "app/studio/demooffer.h"
#include "app/studio/hardwarepage.h"
#include "app/studio/launch/launchpage.h"
#include "app/studio/mainwindow.h"
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/qcustomplotinclude.h"
#include "app/studio/monitor/runspage.h"
#include "app/studio/theme.h"
#include "tests/helpers/testsupport.h"

#include <QAction>
#include <QCheckBox>
#include <QDir>
#include <QGroupBox>
#include <QImage>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QTemporaryDir>

#include <QLabel>
#include <QListWidget>
#include <QSettings>
#include <QSpinBox>
#include <QStackedWidget>
#include <QtTest>

using namespace accel::app;

class tst_MainWindow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_mainwindow"));
        QSettings().clear();
        QSettings().setValue(QStringLiteral("configure/reviewBeforeSave"), false);
    }

    void opensWithEveryPage()
    {
        MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto *sidebar = window.findChild<QListWidget *>(QStringLiteral("sidebar"));
        QVERIFY(sidebar);
        QCOMPARE(sidebar->count(), pageCount);
        QCOMPARE(sidebar->item(4)->text(), QStringLiteral("Big Models"));
        QCOMPARE(window.currentPage(), Page::Hardware);
        // Every page is a real page now: none is a "coming in a later version" placeholder.
        auto *stack = window.findChild<QStackedWidget *>();
        QVERIFY(stack);
        for (const Page page : {Page::Hardware, Page::Configure, Page::Launch, Page::Runs, Page::BigModels}) {
            window.showPage(page);
            QCOMPARE(window.currentPage(), page);
            QVERIFY(stack->currentWidget());
            QVERIFY2(!stack->currentWidget()->findChild<QLabel *>(QStringLiteral("placeholderText")),
                     qPrintable(QStringLiteral("page %1 is still a placeholder").arg(int(page))));
        }
    }

    void shortcutsSwitchPages()
    {
        MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QSignalSpy changed(&window, &MainWindow::pageChanged);
        const Qt::Key keys[] = {Qt::Key_2, Qt::Key_3, Qt::Key_4, Qt::Key_5, Qt::Key_1};
        const Page expected[] = {Page::Configure, Page::Launch, Page::Runs, Page::BigModels, Page::Hardware};
        for (int i = 0; i < 5; ++i) {
            QTest::keyClick(&window, keys[i], Qt::ControlModifier);
            QCOMPARE(window.currentPage(), expected[i]);
            auto *sidebar = window.findChild<QListWidget *>(QStringLiteral("sidebar"));
            QCOMPARE(sidebar->currentRow(), static_cast<int>(expected[i]));
        }
        QCOMPARE(changed.count(), 5);
    }

    void optionsChoosePageAndConfig()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("c.yaml"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_processes: 4\n");
        file.close();
        MainWindow window;
        StudioOptions options;
        options.configFile = path;
        window.applyOptions(options);
        QCOMPARE(window.currentPage(), Page::Configure);
        QCOMPARE(window.configurePage()->filePath(), QFileInfo(path).absoluteFilePath());
        options.configFile.clear();
        options.page = Page::Runs;
        window.applyOptions(options);
        QCOMPARE(window.currentPage(), Page::Runs);
    }

    void ctrlSSavesTheOpenConfig()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("c.yaml"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_processes: 4\n");
        file.close();
        MainWindow window;
        StudioOptions options;
        options.configFile = path;
        window.applyOptions(options);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto *processes = window.findChild<QSpinBox *>(QStringLiteral("editor:num_processes"));
        QVERIFY(processes);
        processes->setValue(6);
        QVERIFY(window.configurePage()->isModified());
        window.showPage(Page::Runs); // Ctrl+S works from any page and shows the config
        QTest::keyClick(&window, Qt::Key_S, Qt::ControlModifier);
        QCOMPARE(window.currentPage(), Page::Configure);
        QVERIFY(!window.configurePage()->isModified());
        QVERIFY(file.open(QIODevice::ReadOnly));
        QVERIFY(file.readAll().contains("num_processes: 6\n"));
    }

    void geometryAndPageAreRemembered()
    {
        QSize wanted;
        {
            MainWindow window;
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            // A size the pages allow (their minimum widths grow as pages gain controls), but not
            // the default one, so that only a remembered geometry can bring it back.
            wanted = window.minimumSizeHint().expandedTo(QSize(900, 640)) + QSize(37, 23);
            window.resize(wanted);
            QTRY_COMPARE(window.size(), wanted);
            window.showPage(Page::Launch);
            QVERIFY(window.close());
        }
        MainWindow again;
        QCOMPARE(again.size(), wanted);
        QCOMPARE(again.currentPage(), Page::Launch);
    }

    void openInConfigureLoadsRecommendation()
    {
        MainWindow window;
        accel::hardware::DetectOptions options;
        options.probePython = false;
        options.probeWorker = false;
        window.hardwarePage()->setDetectOptions(options);
        QSignalSpy finished(window.hardwarePage(), &HardwarePage::detectionFinished);
        window.show();
        window.showPage(Page::Hardware);
        window.hardwarePage()->refresh();
        QVERIFY(finished.wait(60000));
        auto *open = window.hardwarePage()->findChild<QPushButton *>(QStringLiteral("openInConfigure"));
        QVERIFY(open && open->isEnabled());
        open->click();
        QCOMPARE(window.currentPage(), Page::Configure);
        const auto recommended = window.hardwarePage()->recommendedConfig();
        const QString type = QString::fromLatin1(accel::config::toString(recommended.distributedType));
        const QString preview =
            window.configurePage()->findChild<QPlainTextEdit *>(QStringLiteral("preview"))->toPlainText();
        QVERIFY2(preview.contains(QStringLiteral("distributed_type: ")) && preview.contains(type), qPrintable(preview));
        QVERIFY(window.configurePage()->filePath().isEmpty());
        QVERIFY(window.configurePage()->isModified());
    }

    void commandLineScreenshotAndErrors()
    {
        const QString studio = accel::test::binDir() + QStringLiteral("/accel-studio");
        if (!QFileInfo::exists(studio))
            QSKIP("accel-studio is not built in this tree");
        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("shots/runs.png"));
        const QStringList env = {QStringLiteral("QT_QPA_PLATFORM=offscreen")};
        auto result = accel::test::runProgram(
            studio, {QStringLiteral("--page"), QStringLiteral("runs"), QStringLiteral("--screenshot"), png}, 60000, {},
            env);
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        const QImage image(png);
        QCOMPARE(image.size(), QSize(1280, 820));

        result = accel::test::runProgram(studio, {QStringLiteral("--page"), QStringLiteral("nowhere")}, 60000, {}, env);
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral("accel-studio: --page: unknown page 'nowhere'")),
                 qPrintable(result.err));
        result = accel::test::runProgram(studio, {QStringLiteral("--help")}, 60000, {}, env);
        QCOMPARE(result.exitCode, 0);
        QVERIFY(result.out.contains(QStringLiteral("usage: accel-studio")));
    }

    // packaging/screenshots.sh's views: the Cluster tab is pictured once its commands have answered
    // (no hosts, no login node: at once), an unknown view is refused with the list of views.
    void screenshotViews()
    {
        const QString studio = accel::test::binDir() + QStringLiteral("/accel-studio");
        if (!QFileInfo::exists(studio))
            QSKIP("accel-studio is not built in this tree");
        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("cluster.png"));
        const QStringList env = {QStringLiteral("QT_QPA_PLATFORM=offscreen"),
                                 QStringLiteral("ACCEL_STUDIO_SCREENSHOT_SIZE=1024x700"),
                                 QStringLiteral("ACCEL_STUDIO_SCREENSHOT_VIEW=cluster"),
                                 QStringLiteral("HOME=") + dir.path(), QStringLiteral("XDG_CONFIG_HOME=") + dir.path()};
        auto result = accel::test::runProgram(studio, {QStringLiteral("--screenshot"), png}, 60000, {}, env);
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QCOMPARE(QImage(png).size(), QSize(1024, 700));
        result = accel::test::runProgram(
            studio, {QStringLiteral("--screenshot"), png}, 60000, {},
            {QStringLiteral("QT_QPA_PLATFORM=offscreen"), QStringLiteral("ACCEL_STUDIO_SCREENSHOT_VIEW=nowhere")});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral("ACCEL_STUDIO_SCREENSHOT_VIEW 'nowhere' is not wizard, "
                                                    "playground, fp8compare, cluster, memory, runstable or panels")),
                 qPrintable(result.err));
    }

    void helpAndVersionWorkWithoutDisplay()
    {
        // Regression: --help and --version created QApplication first and aborted (exit 134)
        // on a machine without a display.
        const QString studio = accel::test::binDir() + QStringLiteral("/accel-studio");
        if (!QFileInfo::exists(studio))
            QSKIP("accel-studio is not built in this tree");
        const QStringList noDisplay = {QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("DISPLAY"),
                                       QStringLiteral("WAYLAND_DISPLAY")};
        auto result = accel::test::runProgram(studio, {QStringLiteral("--help")}, 30000, {}, noDisplay);
        QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.err));
        QVERIFY(result.out.startsWith(QStringLiteral("usage: accel-studio")));
        result = accel::test::runProgram(studio, {QStringLiteral("--version")}, 30000, {}, noDisplay);
        QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.err));
        QCOMPARE(result.out.trimmed(), QStringLiteral("accel-studio " ACCEL_VERSION));
        result = accel::test::runProgram(studio, {QStringLiteral("--fast")}, 30000, {}, noDisplay);
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral("unknown argument '--fast'")), qPrintable(result.err));
    }

    void firstStartOffersTheDemo()
    {
        QSettings().remove(QStringLiteral("firstStart"));
        {
            MainWindow window;
            window.applyOptions({});
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            auto *offer = window.findChild<DemoOffer *>(QStringLiteral("demoOffer"));
            QVERIFY(offer && offer->isVisible());
            auto *tryIt = offer->findChild<QPushButton *>(QStringLiteral("tryDemo"));
            QVERIFY(tryIt);
            tryIt->click();
            QCOMPARE(window.currentPage(), Page::Launch);
            QVERIFY(!offer->isVisible());
            QVERIFY(window.launchPage()->demoButton()->isVisible());
        }
        // Answered once: a later start does not ask again.
        MainWindow again;
        again.applyOptions({});
        QVERIFY(!again.findChild<DemoOffer *>(QStringLiteral("demoOffer"))->isVisibleTo(&again));
    }

    void windowIsUsableAt1024x700()
    {
        // Regression: the window could not shrink below 1054 px.
        MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        for (int i = 0; i < pageCount; ++i) {
            window.showPage(static_cast<Page>(i));
            QVERIFY2(window.minimumSizeHint().width() <= 1024 && window.minimumSizeHint().height() <= 700,
                     qPrintable(QStringLiteral("page %1 needs %2x%3")
                                    .arg(pageName(static_cast<Page>(i)))
                                    .arg(window.minimumSizeHint().width())
                                    .arg(window.minimumSizeHint().height())));
        }
        window.resize(1024, 700);
        QTRY_COMPARE(window.size(), QSize(1024, 700));
    }

    // Configure at 1024x700: the form of the chosen type does not scroll sideways (it did by 34 px).
    // "Show all fields" still needs 74 px more at this size (every group in two columns).
    void configureFitsWidthAt1024x700()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("fsdp.yaml"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nfsdp_config:\n"
                   "  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_version: 1\nmachine_rank: 0\n"
                   "mixed_precision: bf16\nnum_machines: 1\nnum_processes: 2\nuse_cpu: true\n");
        file.close();
        MainWindow window;
        window.resize(1024, 700);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.showPage(Page::Configure);
        QVERIFY(window.configurePage()->openFile(path));
        QVERIFY(!window.configurePage()->findChild<QCheckBox *>(QStringLiteral("showAllFields"))->isChecked());
        QCoreApplication::processEvents();
        const QList<QScrollArea *> areas = window.configurePage()->findChildren<QScrollArea *>();
        QVERIFY(!areas.isEmpty());
        for (QScrollArea *area : areas) {
            QTRY_VERIFY2(area->horizontalScrollBar()->maximum() == 0,
                         qPrintable(QStringLiteral("%1 scrolls %2 px sideways")
                                        .arg(area->objectName())
                                        .arg(area->horizontalScrollBar()->maximum())));
        }
        // Every field of every block (DeepSpeed, Dynamo, multi-node included) fits as well.
        auto *form = window.configurePage()->form();
        const int defaultShown = form->shownFieldCount();
        window.configurePage()->findChild<QCheckBox *>(QStringLiteral("showAllFields"))->setChecked(true);
        QCOMPARE(form->shownFieldCount(), int(form->keys().size()));
        QVERIFY(form->shownFieldCount() > defaultShown);
        QCoreApplication::processEvents();
        auto needs = [&] { // which block asks for the width, when it does not fit
            QStringList widths;
            for (QGroupBox *box : form->findChildren<QGroupBox *>()) {
                if (box->isVisible())
                    widths << QStringLiteral("%1 %2/%3")
                                  .arg(box->objectName())
                                  .arg(box->minimumSizeHint().width())
                                  .arg(box->width());
            }
            return widths.join(QStringLiteral(", "));
        };
        for (QScrollArea *area : areas) {
            QTRY_VERIFY2(area->horizontalScrollBar()->maximum() == 0,
                         qPrintable(QStringLiteral("with every field shown, %1 scrolls %2 px sideways (%3)")
                                        .arg(area->objectName())
                                        .arg(area->horizontalScrollBar()->maximum())
                                        .arg(needs())));
        }
    }

    void darkThemeReachesTheCharts()
    {
        MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto *loss = window.runsPage()->monitorPage()->chart(MonitorPage::LossChart);
        applyTheme(Theme::Dark);
        QVERIFY(paletteIsDark());
        QTRY_VERIFY(loss->plot()->xAxis->tickLabelColor().lightness() > 150);
        QCOMPARE(loss->plot()->xAxis->tickLabelColor(), loss->palette().color(QPalette::WindowText));
        applyTheme(Theme::Light);
        QVERIFY(!paletteIsDark());
        QTRY_VERIFY(loss->plot()->xAxis->tickLabelColor().lightness() < 100);
        applyTheme(Theme::System);
    }

    // Regression: switching the theme while the studio runs (View > Theme) left the sidebar in
    // the old theme's colours (a light sidebar beside dark pages). Its background follows the palette.
    void sidebarFollowsALiveThemeSwitch()
    {
        MainWindow window;
        window.resize(1024, 700);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto *sidebar = window.findChild<QListWidget *>(QStringLiteral("sidebar"));
        QVERIFY(sidebar);
        const QString pictures = qEnvironmentVariable("ACCEL_TEST_SCREENSHOTS");
        for (const char *theme : {"light", "dark", "light"}) {
            auto *action = window.findChild<QAction *>(QStringLiteral("theme_%1").arg(QLatin1String(theme)));
            QVERIFY(action);
            action->trigger();
            QApplication::processEvents();
            const QImage image = sidebar->grab().toImage();
            if (!pictures.isEmpty())
                window.grab().save(
                    QDir(pictures).filePath(QStringLiteral("theme-switch-%1.png").arg(QLatin1String(theme))));
            // Below the last item: the sidebar's own background.
            const QColor background = image.pixelColor(image.width() / 2, image.height() - 20);
            const QColor expected = QApplication::palette().color(QPalette::AlternateBase);
            QVERIFY2(qAbs(background.lightness() - expected.lightness()) < 16,
                     qPrintable(QStringLiteral("%1: sidebar background %2, the palette's %3")
                                    .arg(QLatin1String(theme), background.name(), expected.name())));
            QCOMPARE(paletteIsDark(), QLatin1String(theme) == QLatin1String("dark"));
            QCOMPARE(background.lightness() < 128, paletteIsDark());
        }
        applyTheme(Theme::System);
    }

    void aboutNamesRuntimeVersions()
    {
        QMap<QString, QString> versions;
        for (const auto &[label, value] : studioVersions())
            versions.insert(label, value);
        QVERIFY(versions.value(QStringLiteral("Qt")).startsWith(QString::fromLatin1(qVersion())));
        QVERIFY(QRegularExpression(QStringLiteral("^\\d+\\.\\d+"))
                    .match(versions.value(QStringLiteral("yaml-cpp")))
                    .hasMatch());
        QVERIFY(QRegularExpression(QStringLiteral("^\\d+\\.\\d+"))
                    .match(versions.value(QStringLiteral("libssh")))
                    .hasMatch());
        QCOMPARE(versions.value(QStringLiteral("Accel Studio")), QStringLiteral(ACCEL_VERSION));
        AboutDialog dialog;
        QVERIFY(dialog.findChildren<QLabel *>().size() >= versions.size());
    }
};

QTEST_MAIN(tst_MainWindow)
#include "tst_mainwindow.moc"
