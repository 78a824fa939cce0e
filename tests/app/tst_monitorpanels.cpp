// The Monitor's panel grid on run directories written by the test: a panel for every logged key in
// sections by prefix, panels hidden, resized, moved and put on a log scale and kept per project, x
// as step, wall time or time since the start, the hover synced across panels with its readout in
// the plot, legend clicks and highlights, smoothing in W&B's direction, a lone point drawn as a
// marker, empty states that say why, legends that tell compared runs apart, and the offer to read
// metrics from a print-only script's output with its preview.
#include "app/studio/mainwindow.h"
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/panelgrid.h"
#include "app/studio/monitor/plotcurves.h"
#include "app/studio/monitor/runspage.h"
#include "app/studio/monitor/stdoutoffer.h"
#include "app/studio/windowsize.h"
#include "monitor/runannotations.h"

#include "tests/app/monitorpagesupport.h"

#include <QComboBox>
#include <QGridLayout>
#include <QMenu>
#include <QMouseEvent>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>
#include <QToolTip>

using namespace accel;
using namespace accel::test::monitorpage;
using accel::app::MetricPlot;
using accel::app::MonitorPage;
using accel::app::XMode;

namespace {

// One metrics line of rank `rank` at `step` with these values (at time 1000 + step).
QByteArray line(int rank, int step, const QList<std::pair<QString, double>> &values, const QString &kind = {})
{
    QString text = QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":%2,\"step\":%3").arg(1000 + step).arg(rank).arg(step);
    if (!kind.isEmpty())
        text += QStringLiteral(",\"kind\":\"%1\"").arg(kind);
    for (const auto &[name, value] : values)
        text += QStringLiteral(",\"%1\":%2").arg(name).arg(value);
    return (text + QStringLiteral("}\n")).toUtf8();
}

void mouseMove(QWidget *widget, QPoint at)
{
    QMouseEvent move(QEvent::MouseMove, QPointF(at), QPointF(widget->mapToGlobal(at)), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QCoreApplication::sendEvent(widget, &move);
}

QAction *actionNamed(QMenu *menu, const QString &text)
{
    for (QAction *action : menu->actions()) {
        if (action->text() == text)
            return action;
        if (action->menu())
            if (QAction *inner = actionNamed(action->menu(), text))
                return inner;
    }
    return nullptr;
}

QPoint legendItemCenter(MetricPlot *plot, const QString &name)
{
    for (int i = 0; i < plot->plot()->legend->itemCount(); ++i) {
        auto *item = qobject_cast<QCPPlottableLegendItem *>(plot->plot()->legend->item(i));
        if (item && item->plottable()->name() == name)
            return item->outerRect().center();
    }
    return {};
}

QCPGraph *graphNamed(MetricPlot *plot, const QString &name)
{
    for (int i = 0; i < plot->plot()->graphCount(); ++i) {
        if (plot->plot()->graph(i)->name() == name && !plot->plot()->graph(i)->property("faint").toBool())
            return plot->plot()->graph(i);
    }
    return nullptr;
}

} // namespace

class tst_MonitorPanels : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_monitorpanels"));
    }
    void init() { QSettings().clear(); }

    // Regression: the default window (1200x800 on any screen, the charts stretched into what the
    // run list and the tables left) made plots about 60 px tall. The first window takes most of the
    // screen (at most 1600x1000, never more than the screen), panels keep their height (the charts
    // scroll), and the tables below give way: in the default window and at 1024x700 a chart's plot
    // area is at least 150 px tall and a whole panel fits in the charts' view.
    void defaultWindowGivesChartsTheirHeight()
    {
        QSettings().remove(QStringLiteral("mainwindow/geometry"));
        QTemporaryDir root;
        const QString run = root.filePath(QStringLiteral("20261128-010000-tall-0001"));
        QVERIFY(QDir().mkpath(run + QStringLiteral("/metrics")));
        QFile manifest(run + QStringLiteral("/run.json"));
        QVERIFY(manifest.open(QIODevice::WriteOnly));
        manifest.write(R"({"schema":"accel.run","version":1,"name":"tall","state":"succeeded","created":1000})");
        manifest.close();
        QFile metrics(run + QStringLiteral("/metrics/rank0.jsonl"));
        QVERIFY(metrics.open(QIODevice::WriteOnly));
        for (int step = 1; step <= 20; ++step)
            metrics.write(QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":0,\"step\":%1,\"loss\":%2,\"lr\":0.001,"
                                         "\"grad_norm\":1,\"samples_per_s\":10,\"accuracy\":0.5}\n")
                              .arg(1000 + step)
                              .arg(2.0 / step)
                              .toUtf8());
        metrics.close();
        app::MainWindow window;
        const QSize available = window.screen()->availableGeometry().size();
        QCOMPARE(window.size(), app::defaultWindowSize(available).expandedTo(window.minimumSizeHint()));
        QCOMPARE(app::defaultWindowSize({1920, 1080}), QSize(1600, 972));
        QCOMPARE(app::defaultWindowSize({1366, 768}), QSize(1229, 700));
        QCOMPARE(app::defaultWindowSize({800, 600}), QSize(800, 600)); // never more than the screen
        window.runsPage()->setRunsRoot(root.path());
        window.showPage(app::Page::Runs);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto *loss = window.runsPage()->monitorPage()->chart(MonitorPage::LossChart);
        auto *view = window.runsPage()->monitorPage()->findChild<QScrollArea *>();
        QVERIFY(view);
        for (const QSize size : {window.size(), QSize(1024, 700)}) {
            window.resize(size);
            QTRY_VERIFY_WITH_TIMEOUT(loss->isVisible() && loss->rawPoints() == 20, 5000);
            QTest::qWait(50);
            loss->replotNow();
            const QString sizes = QStringLiteral("window %1x%2: plot area %3 px, panel %4 px, charts' view %5 px")
                                      .arg(window.width())
                                      .arg(window.height())
                                      .arg(loss->plot()->axisRect()->height())
                                      .arg(loss->height())
                                      .arg(view->viewport()->height());
            qInfo("%s", qPrintable(sizes));
            QVERIFY2(loss->plot()->axisRect()->height() >= 150, qPrintable(sizes));
            QVERIFY2(view->viewport()->height() >= loss->height(), qPrintable(sizes));
        }
    }

    void everyKeyGetsAPanelInItsSection()
    {
        QTemporaryDir root;
        const QString run = makeRun(root.path(), QStringLiteral("20261128-010000-keys-0001"));
        QByteArray lines;
        for (int step = 1; step <= 5; ++step) {
            lines += line(0, step,
                          {{QStringLiteral("loss"), 3.0 / step},
                           {QStringLiteral("accuracy"), 0.1 * step},
                           {QStringLiteral("train/perplexity"), 20.0 / step},
                           {QStringLiteral("train/tokens"), 512.0 * step},
                           {QStringLiteral("eval/accuracy"), 0.05 * step},
                           {QStringLiteral("timing/data_s"), 0.01}});
        }
        QVERIFY(appendText(run + QStringLiteral("/metrics/rank0.jsonl"), lines));
        // The supervisor's samples: CPU is a built-in chart, the load a panel to add, pid none.
        QVERIFY(appendText(run + QStringLiteral("/metrics/system.jsonl"),
                           "{\"v\":1,\"time\":999,\"rank\":-1,\"kind\":\"system\",\"load_1m\":1.5,\"cpu_percent\":40}\n"
                           "{\"v\":1,\"time\":999,\"rank\":0,\"kind\":\"system\",\"pid\":42,\"cpu_percent\":90}\n"));
        MonitorPage page;
        page.resize(1400, 900);
        page.show();
        page.setRuns({run});
        app::PanelGrid *grid = page.panels();
        QTRY_VERIFY_WITH_TIMEOUT(grid->shownKeys().contains(QStringLiteral("timing/data_s")), 5000);
        QTRY_COMPARE(grid->shownKeys(),
                     (QStringList{QStringLiteral("loss"), QStringLiteral("accuracy"), QStringLiteral("eval/accuracy"),
                                  QStringLiteral("timing/data_s"), QStringLiteral("train/perplexity"),
                                  QStringLiteral("train/tokens"), QStringLiteral("cpu_percent")}));
        QTRY_COMPARE(grid->sections(),
                     (QStringList{QStringLiteral("Charts"), QStringLiteral("eval"), QStringLiteral("timing"),
                                  QStringLiteral("train"), QStringLiteral("System")}));
        QCOMPARE(grid->sectionHeader(QStringLiteral("train"))->text(), QStringLiteral("train (2 panels)"));
        QVERIFY(grid->panelKeys().contains(QStringLiteral("load_1m")));
        QVERIFY(grid->isPanelHidden(QStringLiteral("load_1m"))); // there to add from the Panels menu
        QVERIFY(!grid->panelKeys().contains(QStringLiteral("pid")));
        MetricPlot *perplexity = page.panel(QStringLiteral("train/perplexity"));
        QCOMPARE(perplexity->title(), QStringLiteral("train/perplexity"));
        QCOMPARE(perplexity->rawPoints(), qint64(5));
        QCOMPARE(page.panel(QStringLiteral("timing/data_s"))->plot()->yAxis->label(), QStringLiteral("data_s (s)"));
        // A key logged later gets its panel as it comes.
        QVERIFY(
            appendText(run + QStringLiteral("/metrics/rank0.jsonl"), line(0, 6, {{QStringLiteral("late_key"), 1}})));
        QTRY_VERIFY_WITH_TIMEOUT(grid->shownKeys().contains(QStringLiteral("late_key")), 5000);
        // The Panels menu adds the load.
        QMenu menu;
        grid->fillPanelsMenu(&menu);
        QAction *load = actionNamed(&menu, QStringLiteral("load_1m"));
        QVERIFY(load && !load->isChecked());
        load->setChecked(true);
        QTRY_VERIFY(grid->shownKeys().contains(QStringLiteral("load_1m")));
        QCOMPARE(page.panel(QStringLiteral("load_1m"))->readout(0), QStringList{QStringLiteral("host: 1.5 (0.0 s)")});
    }

    void panelsAreArrangedAndKeptPerProject()
    {
        QTemporaryDir root;
        const QString first = makeRun(root.path(), QStringLiteral("20261128-010000-proj-0001"));
        const QString second = makeRun(root.path(), QStringLiteral("20261128-020000-proj-0002"));
        const QString other = makeRun(root.path(), QStringLiteral("20261128-030000-other-0003"));
        for (const QString &run : {first, second, other}) {
            QByteArray lines;
            for (int step = 1; step <= 4; ++step)
                lines += line(0, step,
                              {{QStringLiteral("a"), step}, {QStringLiteral("b"), step}, {QStringLiteral("c"), step}});
            QVERIFY(appendText(run + QStringLiteral("/metrics/rank0.jsonl"), lines));
        }
        const QStringList abc{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")};
        {
            MonitorPage page;
            page.resize(1400, 900);
            page.show();
            page.setRuns({first});
            app::PanelGrid *grid = page.panels();
            QTRY_COMPARE_WITH_TIMEOUT(grid->shownKeys(), abc, 5000);
            // From the panel's menu: c to the start, b hidden, a full width and tall, a on a log scale.
            std::unique_ptr<QMenu> menu(grid->createPanelMenu(QStringLiteral("c"), nullptr));
            actionNamed(menu.get(), QStringLiteral("Move to the start"))->trigger();
            QCOMPARE(grid->shownKeys(), (QStringList{QStringLiteral("c"), QStringLiteral("a"), QStringLiteral("b")}));
            menu.reset(grid->createPanelMenu(QStringLiteral("b"), nullptr));
            actionNamed(menu.get(), QStringLiteral("Hide panel"))->trigger();
            menu.reset(grid->createPanelMenu(QStringLiteral("a"), nullptr));
            actionNamed(menu.get(), QStringLiteral("Full width"))->trigger();
            actionNamed(menu.get(), QStringLiteral("Tall"))->trigger();
            actionNamed(menu.get(), QStringLiteral("Log scale"))->trigger();
            QCOMPARE(grid->shownKeys(), (QStringList{QStringLiteral("c"), QStringLiteral("a")}));
            MetricPlot *a = page.panel(QStringLiteral("a"));
            QCOMPARE(a->height(), app::panelHeightPixels(app::PanelHeight::Tall));
            QVERIFY(a->isLogScale());
            QCOMPARE(a->plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
            auto *layout = static_cast<QGridLayout *>(a->parentWidget()->layout());
            int row, column, rows, columns;
            layout->getItemPosition(layout->indexOf(a), &row, &column, &rows, &columns);
            QCOMPARE(columns, grid->columns()); // full width: a row of its own, below c
            QCOMPARE(row, 1);
            QTRY_VERIFY(a->width() > 2 * page.panel(QStringLiteral("c"))->width());
            QVERIFY(!grid->movePanel(QStringLiteral("c"), -1)); // the first cannot go further left
        }
        {
            // Another run of the same project opens arranged the same way.
            MonitorPage page;
            page.resize(1400, 900);
            page.show();
            page.setRuns({second});
            QTRY_COMPARE_WITH_TIMEOUT(page.panels()->shownKeys(),
                                      (QStringList{QStringLiteral("c"), QStringLiteral("a")}), 5000);
            QVERIFY(page.panel(QStringLiteral("a"))->isLogScale());
            // Another project has its own (the default here).
            page.setRuns({other});
            QTRY_COMPARE_WITH_TIMEOUT(page.panels()->shownKeys(), abc, 5000);
            QVERIFY(!page.panel(QStringLiteral("a"))->isLogScale());
            page.setRuns({second});
            page.panels()->resetLayout();
            QTRY_COMPARE(page.panels()->shownKeys(), abc);
        }
    }

    void xAsStepWallTimeOrRelativeTimeAndLogScale()
    {
        QTemporaryDir root;
        const QString run = makeRun(root.path(), QStringLiteral("20261128-010000-axes-0001"));
        QByteArray lines;
        for (int step = 10; step <= 20; ++step)
            lines += line(0, step, {{QStringLiteral("loss"), step - 15.0}}); // -5 .. 5
        QVERIFY(appendText(run + QStringLiteral("/metrics/rank0.jsonl"), lines));
        MonitorPage page;
        page.resize(1200, 800);
        page.show();
        page.setSmoothing(0);
        page.setRuns({run});
        MetricPlot *loss = page.chart(MonitorPage::LossChart);
        QTRY_COMPARE_WITH_TIMEOUT(loss->rawPoints(), qint64(11), 5000);
        loss->replotNow();
        QCOMPARE(loss->plot()->xAxis->label(), QStringLiteral("step"));
        QCOMPARE(loss->plot()->xAxis->range().lower, 10.0);
        page.xModeBox()->setCurrentIndex(page.xModeBox()->findText(QStringLiteral("Wall time")));
        loss->replotNow();
        QCOMPARE(loss->plot()->xAxis->label(), QStringLiteral("wall time"));
        QCOMPARE(loss->plot()->xAxis->range().lower, 1010.0); // Unix seconds of the first sample
        QVERIFY(qSharedPointerDynamicCast<QCPAxisTickerDateTime>(loss->plot()->xAxis->ticker()));
        QCOMPARE(loss->readout(1012.2),
                 QStringList{QStringLiteral("rank 0: -3 (%1)").arg(app::formatX(1012, XMode::WallTime))});
        page.setXMode(XMode::RelativeTime);
        loss->replotNow();
        QCOMPARE(loss->plot()->xAxis->label(), QStringLiteral("time since start (s)"));
        QCOMPARE(loss->plot()->xAxis->range().lower, 0.0);
        QCOMPARE(loss->plot()->xAxis->range().upper, 10.0);
        QCOMPARE(loss->readout(2), QStringList{QStringLiteral("rank 0: -3 (2.0 s)")});
        // A log scale leaves out what it cannot draw (values <= 0).
        page.panels()->setPanelLogScale(QStringLiteral("loss"), true);
        loss->replotNow();
        const auto data = loss->plot()->graph(0)->data();
        int finite = 0;
        for (auto it = data->constBegin(); it != data->constEnd(); ++it)
            finite += std::isfinite(it->value) ? 1 : 0;
        QCOMPARE(finite, 5); // 1 .. 5
        QVERIFY(loss->plot()->yAxis->range().lower > 0);
        // The choice is kept for the next page.
        MonitorPage again;
        QCOMPARE(again.xMode(), XMode::RelativeTime);
    }

    void hoverIsSyncedAcrossPanels()
    {
        QTemporaryDir root;
        const QString run = makeRun(root.path(), QStringLiteral("20261128-010000-hover-0001"));
        QByteArray lines;
        for (int step = 0; step <= 20; ++step)
            lines +=
                line(0, step, {{QStringLiteral("loss"), 5.0 - step * 0.1}, {QStringLiteral("accuracy"), step * 0.01}});
        QVERIFY(appendText(run + QStringLiteral("/metrics/rank0.jsonl"), lines));
        MonitorPage page;
        page.resize(1400, 900);
        page.show();
        page.setSmoothing(0);
        page.setRuns({run});
        MetricPlot *loss = page.chart(MonitorPage::LossChart);
        MetricPlot *accuracy = nullptr;
        QTRY_VERIFY_WITH_TIMEOUT((accuracy = page.panel(QStringLiteral("accuracy"))) && accuracy->isVisible(), 5000);
        QTRY_COMPARE(loss->rawPoints(), qint64(21));
        loss->replotNow();
        accuracy->replotNow();
        const QPoint at(int(loss->plot()->xAxis->coordToPixel(10)), loss->plot()->axisRect()->center().y());
        mouseMove(loss->plot(), at);
        QCOMPARE(loss->crosshairText(), QStringLiteral("Loss\nrank 0: 4 (step 10)"));
        QVERIFY(loss->isCrosshairShown());
        // The readout is drawn in the plot beside the pointer; no tooltip replaces it when the
        // pointer rests (regression: a static hint took its place after a second).
        QHelpEvent rest(QEvent::ToolTip, at, loss->plot()->mapToGlobal(at));
        QCoreApplication::sendEvent(loss->plot(), &rest);
        QVERIFY(!QToolTip::isVisible());
        QVERIFY(loss->isCrosshairShown());
        // The other panel follows the same step.
        QVERIFY(accuracy->isCrosshairShown());
        QCOMPARE(accuracy->crosshairText(), QStringLiteral("accuracy\nrank 0: 0.1 (step 10)"));
        // Leaving the plot hides both.
        QEvent leave(QEvent::Leave);
        QCoreApplication::sendEvent(loss->plot(), &leave);
        QVERIFY(!loss->isCrosshairShown());
        QVERIFY(!accuracy->isCrosshairShown());
    }

    void legendClickHidesAndHoverHighlights()
    {
        QTemporaryDir root;
        const QString run = makeRun(root.path(), QStringLiteral("20261128-010000-legend-0001"));
        for (int rank = 0; rank < 2; ++rank) {
            QByteArray lines;
            for (int step = 0; step <= 10; ++step)
                lines += line(rank, step, {{QStringLiteral("loss"), rank * 10.0 + step}});
            QVERIFY(appendText(run + QStringLiteral("/metrics/rank%1.jsonl").arg(rank), lines));
        }
        MonitorPage page;
        page.resize(1400, 900);
        page.show();
        page.setSmoothing(0);
        page.setRuns({run});
        MetricPlot *loss = page.chart(MonitorPage::LossChart);
        QTRY_COMPARE_WITH_TIMEOUT(loss->rawPoints(), qint64(22), 5000);
        loss->replotNow();
        QCOMPARE(loss->curveNames(),
                 (QStringList{QStringLiteral("rank 0"), QStringLiteral("rank 1"), QStringLiteral("mean")}));
        QCOMPARE(loss->plot()->yAxis->range().upper > 20, true);
        // Hovering an entry highlights its curve and fades the others.
        const QPoint entry = legendItemCenter(loss, QStringLiteral("rank 1"));
        QVERIFY(!entry.isNull());
        mouseMove(loss->plot(), entry);
        QCOMPARE(loss->highlightedCurve(), QStringLiteral("rank 1"));
        QVERIFY(graphNamed(loss, QStringLiteral("rank 1"))->pen().widthF() > 2);
        QVERIFY(graphNamed(loss, QStringLiteral("rank 0"))->pen().color().alpha() < 255);
        // A click hides it (the y range follows what is left), another brings it back.
        QTest::mouseClick(loss->plot(), Qt::LeftButton, Qt::NoModifier, entry);
        QVERIFY(loss->hiddenCurves().contains(QStringLiteral("rank 1")));
        QVERIFY(!graphNamed(loss, QStringLiteral("rank 1"))->visible());
        QVERIFY(loss->plot()->yAxis->range().upper < 16); // rank 0 and the mean: up to 15
        QTest::mouseClick(loss->plot(), Qt::LeftButton, Qt::NoModifier, entry);
        QVERIFY(graphNamed(loss, QStringLiteral("rank 1"))->visible());
    }

    void smoothingRunsInTheDirectionOfWandb()
    {
        // Regression: 0.95 meant no smoothing. Now 0 is the raw curve and 0.99 nearly flat.
        std::vector<double> raw;
        for (int i = 0; i < 60; ++i)
            raw.push_back(i % 2 ? 9 : 1);
        QCOMPARE(app::smoothed(raw, 0), raw);
        const std::vector<double> heavy = app::smoothed(raw, 0.99);
        const std::vector<double> light = app::smoothed(raw, 0.3);
        auto spread = [](const std::vector<double> &v) { // over the last ten points
            return *std::max_element(v.end() - 10, v.end()) - *std::min_element(v.end() - 10, v.end());
        };
        QVERIFY2(spread(heavy) < 0.5 && spread(light) > 3,
                 qPrintable(QStringLiteral("%1 %2").arg(spread(heavy)).arg(spread(light))));

        QTemporaryDir root;
        const QString run = makeRun(root.path(), QStringLiteral("20261128-010000-smooth-0001"));
        QByteArray lines;
        for (int step = 0; step < 8; ++step)
            lines += line(0, step, {{QStringLiteral("loss"), raw[size_t(step)]}});
        QVERIFY(appendText(run + QStringLiteral("/metrics/rank0.jsonl"), lines));
        MonitorPage page;
        page.show();
        page.setRuns({run});
        MetricPlot *loss = page.chart(MonitorPage::LossChart);
        QTRY_COMPARE_WITH_TIMEOUT(loss->rawPoints(), qint64(8), 5000);
        page.smoothingSlider()->setValue(0);
        loss->replotNow();
        QCOMPARE(loss->plot()->graphCount(), 1); // raw only, at full strength
        QCOMPARE(loss->plot()->graph(0)->pen().color().alpha(), 255);
        page.smoothingSlider()->setValue(99);
        QCOMPARE(page.smoothing(), 0.99);
        loss->replotNow();
        QCOMPARE(loss->plot()->graphCount(), 2);
        QVERIFY(loss->plot()->graph(0)->pen().color().alpha() < 255); // the raw curve stays, faint
    }

    void aLonePointIsDrawnAsAMarker()
    {
        QTemporaryDir root;
        const QString run = makeRun(root.path(), QStringLiteral("20261128-010000-point-0001"));
        QByteArray lines;
        for (int step = 1; step <= 10; ++step)
            lines += line(0, step, {{QStringLiteral("loss"), 2.0}});
        lines += line(0, 10, {{QStringLiteral("loss"), 1.5}}, QStringLiteral("eval")); // one evaluation
        QVERIFY(appendText(run + QStringLiteral("/metrics/rank0.jsonl"), lines));
        MonitorPage page;
        page.show();
        page.setSmoothing(0);
        page.setRuns({run});
        MetricPlot *eval = page.chart(MonitorPage::EvalLossChart);
        QTRY_COMPARE_WITH_TIMEOUT(eval->rawPoints(), qint64(1), 5000);
        QTRY_VERIFY(eval->isVisible()); // laid out on the event loop's next turn after the data
        eval->replotNow();
        QCOMPARE(eval->plot()->graph(0)->scatterStyle().shape(), QCPScatterStyle::ssDisc);
        QVERIFY(eval->plot()->xAxis->range().contains(10));
        MetricPlot *loss = page.chart(MonitorPage::LossChart);
        loss->replotNow();
        QCOMPARE(loss->plot()->graph(0)->scatterStyle().shape(), QCPScatterStyle::ssNone);
    }

    void emptyStatesSayWhy()
    {
        QTemporaryDir root;
        const QString withData = makeRun(root.path(), QStringLiteral("20261128-010000-data-0001"));
        QByteArray lines;
        for (int step = 100; step <= 200; step += 10)
            lines += line(0, step, {{QStringLiteral("loss"), 50.0}});
        QVERIFY(appendText(withData + QStringLiteral("/metrics/rank0.jsonl"), lines));
        const QString failed = makeRun(root.path(), QStringLiteral("20261128-020000-crash-0002"));
        QVERIFY(appendText(failed + QStringLiteral("/logs/rank0.log"), "Traceback ...\nValueError: bad\n"));
        QVERIFY(endRun(failed, {}, QStringLiteral("failed"), QStringLiteral("rank 0 exit 1")));
        const QString starting = makeRun(root.path(), QStringLiteral("20261128-030000-fresh-0003"));

        MonitorPage page;
        page.resize(1200, 800);
        page.show();
        page.setRuns({withData});
        MetricPlot *loss = page.chart(MonitorPage::LossChart);
        QTRY_COMPARE_WITH_TIMEOUT(loss->rawPoints(), qint64(11), 5000);
        QTRY_VERIFY(page.emptyStateText().isEmpty());
        // Regression: a run that failed before its first metric showed nine empty charts with the
        // previous run's axes.
        page.setRuns({failed});
        QTRY_COMPARE_WITH_TIMEOUT(
            page.emptyStateText(),
            QStringLiteral("crash failed before it logged a metric: its error is in the card above "
                           "and in Logs."),
            5000);
        QVERIFY(!loss->isVisible());
        QVERIFY(!page.stdoutOffer()->isVisible()); // a traceback holds no metric to offer
        loss->replotNow();
        QCOMPARE(loss->plot()->xAxis->range(), QCPRange(0, 1));
        QCOMPARE(loss->plot()->graphCount(), 0);
        page.setRuns({starting});
        QTRY_COMPARE_WITH_TIMEOUT(page.emptyStateText(),
                                  QStringLiteral("Waiting for fresh's first metrics line (metrics/rankN.jsonl)…"),
                                  5000);
        QVERIFY(appendText(starting + QStringLiteral("/logs/rank0.log"), "epoch 1 done\n"));
        QTRY_COMPARE_WITH_TIMEOUT(page.emptyStateText(),
                                  QStringLiteral("fresh prints but has logged no metric yet (metrics/rankN.jsonl)."),
                                  5000);
        QVERIFY(
            appendText(starting + QStringLiteral("/metrics/rank0.jsonl"), line(0, 1, {{QStringLiteral("loss"), 1}})));
        QTRY_VERIFY_WITH_TIMEOUT(page.emptyStateText().isEmpty(), 5000);
    }

    void comparedRunsHaveLegendsThatTellThemApart()
    {
        // Regression: every run's legend was cut to the same "20261128-225…".
        QTemporaryDir root;
        QStringList runs;
        for (const QString &id :
             {QStringLiteral("20261128-225301-train-aaaa"), QStringLiteral("20261128-225302-train-bbbb"),
              QStringLiteral("20261128-225303-train-cccc")}) {
            const QString run = makeRun(root.path(), id);
            QByteArray lines;
            for (int step = 1; step <= 3; ++step)
                lines += line(0, step, {{QStringLiteral("loss"), step + runs.size()}});
            QVERIFY(appendText(run + QStringLiteral("/metrics/rank0.jsonl"), lines));
            runs.append(run);
        }
        QVERIFY(monitor::writeRunAnnotations(runs[2], {QStringLiteral("lr 3e-4"), {}, {}}));
        MonitorPage page;
        page.resize(1200, 800);
        page.show();
        page.setSmoothing(0);
        page.setRuns(runs);
        QCOMPARE(page.runLabels(), (QStringList{QStringLiteral("train · aaaa"), QStringLiteral("train · bbbb"),
                                                QStringLiteral("lr 3e-4")}));
        MetricPlot *loss = page.chart(MonitorPage::LossChart);
        QTRY_COMPARE_WITH_TIMEOUT(loss->rawPoints(), qint64(9), 5000);
        loss->replotNow();
        QCOMPARE(loss->curveNames(), page.runLabels());
        // A name given by the Runs page (an edit there) replaces them.
        page.setRunNames({{runs[0], QStringLiteral("baseline")}});
        loss->replotNow();
        QCOMPARE(loss->curveNames().first(), QStringLiteral("baseline"));
    }

    void printOnlyScriptIsOfferedItsOutputAsMetrics()
    {
        QTemporaryDir root;
        const QString run = makeRun(root.path(), QStringLiteral("20261128-010000-prints-0001"));
        QByteArray printed;
        for (int step = 1; step <= 6; ++step)
            printed +=
                QStringLiteral("step=%1 loss=%2 accuracy=%3\n").arg(step).arg(2.0 / step).arg(0.1 * step).toUtf8();
        QVERIFY(appendText(run + QStringLiteral("/logs/rank0.log"), "loading data\n" + printed));
        MonitorPage page;
        page.resize(1200, 800);
        page.show();
        page.setRuns({run});
        app::StdoutOffer *offer = page.stdoutOffer();
        QTRY_VERIFY_WITH_TIMEOUT(offer->isVisible(), 5000);
        QCOMPARE(offer->preview().samples, 6);
        QCOMPARE(offer->preview().keys, (QStringList{QStringLiteral("loss"), QStringLiteral("accuracy")}));
        QVERIFY2(offer->text().contains(QStringLiteral("step 1: loss=2, accuracy=0.1")), qPrintable(offer->text()));
        offer->acceptButton()->click();
        QTRY_COMPARE_WITH_TIMEOUT(page.chart(MonitorPage::LossChart)->rawPoints(), qint64(6), 5000);
        QTRY_VERIFY(page.panels()->shownKeys().contains(QStringLiteral("accuracy")));
        QVERIFY(!offer->isVisible());
        QVERIFY(page.stdoutMetrics(0));
        // The project's runs are read that way from now on.
        MonitorPage again;
        again.setRuns({run});
        QVERIFY(again.stdoutMetrics(0));
        QTRY_COMPARE_WITH_TIMEOUT(again.chart(MonitorPage::LossChart)->rawPoints(), qint64(6), 5000);
    }
};

QTEST_MAIN(tst_MonitorPanels)
#include "tst_monitorpanels.moc"
