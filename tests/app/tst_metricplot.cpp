// MetricPlot's value axis at the sizes the Monitor gives a chart: at 1024x700 a chart is about 130
// px tall, and five tick labels of the learning rate or of memory stacked into each other. The
// ticks now follow the axis height: labels at least 2.5 lines apart, never fewer than two.
#include "app/studio/monitor/axisunits.h"
#include "app/studio/monitor/chartseries.h"
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/qcustomplotinclude.h"

#include <QFontMetrics>
#include <QtTest>

using namespace accel;

class tst_MetricPlot : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void tickLabelsNeverOverlap_data()
    {
        QTest::addColumn<int>("height");
        QTest::addColumn<int>("unit");
        for (const int height : {110, 130, 180, 260, 420}) {
            QTest::addRow("lr %d px", height) << height << int(app::AxisUnit::Plain);
            QTest::addRow("memory %d px", height) << height << int(app::AxisUnit::Bytes);
        }
    }
    void tickLabelsNeverOverlap()
    {
        QFETCH(int, height);
        QFETCH(int, unit);
        app::ChartSpec spec;
        spec.title = QStringLiteral("chart");
        spec.unit = app::AxisUnit(unit);
        spec.valueLabel = QStringLiteral("value");
        app::MetricPlot chart(spec);
        chart.resize(300, height);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        QCustomPlot *plot = chart.plot();
        // A warm-up schedule (0 to 3e-4) or a memory curve (1.8 to 2.2 GiB).
        const bool bytes = spec.unit == app::AxisUnit::Bytes;
        QCPGraph *graph = plot->addGraph();
        for (int step = 0; step <= 100; ++step)
            graph->addData(step, bytes ? (1.8 + 0.004 * step) * 1073741824.0 : 3e-4 * std::min(1.0, step / 20.0));
        plot->rescaleAxes();
        plot->replot();
        QTest::qWait(50); // the queued replot after the tick count changed
        plot->replot();
        const QVector<double> ticks = plot->yAxis->tickVector();
        QVERIFY2(ticks.size() >= 2, qPrintable(QString::number(ticks.size())));
        const int line = QFontMetrics(plot->yAxis->tickLabelFont()).height();
        for (int i = 1; i < ticks.size(); ++i) {
            const double apart =
                std::abs(plot->yAxis->coordToPixel(ticks[i]) - plot->yAxis->coordToPixel(ticks[i - 1]));
            QVERIFY2(apart >= 1.2 * line, qPrintable(QStringLiteral("%1 ticks on %2 px: %3 px apart, a label is %4 px")
                                                         .arg(ticks.size())
                                                         .arg(plot->axisRect()->height())
                                                         .arg(apart)
                                                         .arg(line)));
        }
        if (height >= 420)
            QVERIFY(ticks.size() >= 4); // a tall chart keeps its detail
    }
};

QTEST_MAIN(tst_MetricPlot)
#include "tst_metricplot.moc"
