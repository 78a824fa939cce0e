#include "app/studio/monitor/stdoutoffer.h"

#include "monitor/runmonitor.h"
#include "monitor/stdoutmetricsparser.h"

#include <QCoreApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QMap>
#include <QPushButton>

#include <cmath>

namespace accel::app {

namespace {

constexpr int kPreviewLines = 400; // the newest lines are enough to show what would be read

} // namespace

StdoutPreview previewStdoutMetrics(const QList<std::pair<int, QString>> &lines, int maximumExamples)
{
    StdoutPreview preview;
    QMap<int, monitor::StdoutMetricsParser> parsers; // per rank, as the run source reads them
    for (const auto &[rank, text] : lines) {
        monitor::StdoutMetricsParser &parser = parsers[rank];
        parser.setRank(rank);
        monitor::MetricBatch batch;
        if (parser.parseLine(text, 0, batch) == 0)
            continue;
        for (const monitor::MetricRow &row : batch.rows) {
            ++preview.samples;
            QStringList values;
            for (std::uint32_t i = 0; i < row.valueCount; ++i) {
                const monitor::MetricValue &value = batch.values[row.firstValue + i];
                const QString name = QString::fromUtf8(batch.names[size_t(value.name)]);
                if (!preview.keys.contains(name))
                    preview.keys.append(name);
                values.append(QStringLiteral("%1=%2").arg(name, QString::number(value.value, 'g', 5)));
            }
            if (preview.examples.size() < maximumExamples)
                preview.examples.append(QCoreApplication::translate("accel::app::StdoutOffer", "step %1: %2")
                                            .arg(row.step)
                                            .arg(values.join(QStringLiteral(", "))));
        }
    }
    return preview;
}

StdoutOffer::StdoutOffer(QWidget *parent) : QWidget(parent)
{
    setObjectName(QStringLiteral("stdoutOffer"));
    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(8, 4, 8, 4);
    m_text = new QLabel(this);
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_accept = new QPushButton(tr("Read metrics from the output"), this);
    m_accept->setToolTip(tr("Charts what the script prints: Hugging Face Trainer dicts, key=value pairs with a "
                            "known name (loss, lr, accuracy, ...), tqdm progress bars"));
    layout->addWidget(m_text, 1);
    layout->addWidget(m_accept);
    setStyleSheet(QStringLiteral("#stdoutOffer { border-left: 4px solid #ff7f0e; }"));
    setVisible(false);
    connect(m_accept, &QPushButton::clicked, this, &StdoutOffer::accepted);
    m_timer.setInterval(1000);
    connect(&m_timer, &QTimer::timeout, this, &StdoutOffer::refresh);
}

void StdoutOffer::setRun(monitor::RunMonitor *run, const QString &label, bool reading)
{
    m_run = run;
    m_label = label;
    m_reading = reading;
    if (run)
        m_timer.start();
    else
        m_timer.stop();
    refresh();
}

void StdoutOffer::refresh()
{
    // Offered while the run has printed lines and logged no metric of its own (the supervisor's
    // system samples do not count).
    bool offer = m_run && !m_reading;
    if (offer) {
        const QStringList names = m_run->store()->allScalarNames();
        offer = std::all_of(names.begin(), names.end(),
                            [this](const QString &name) { return m_run->store()->isSystemName(name); });
    }
    const auto *logs = offer ? m_run->logModel() : nullptr;
    offer = offer && logs->rowCount() > 0;
    if (offer) {
        QList<std::pair<int, QString>> lines;
        const int rows = logs->rowCount();
        for (int row = std::max(0, rows - kPreviewLines); row < rows; ++row)
            lines.append({logs->index(row, monitor::LogModel::TextColumn).data(monitor::LogModel::RankRole).toInt(),
                          logs->index(row, monitor::LogModel::TextColumn).data().toString()});
        m_preview = previewStdoutMetrics(lines);
        // Output with nothing that reads as a metric (a traceback) is not offered: the status
        // line above already names the tracker.
        offer = m_preview.samples > 0;
        m_text->setText(
            tr("%1 prints but logs no metrics. Its output has %2 of %3, e.g. %4.")
                .arg(m_label, m_preview.samples == 1 ? tr("1 sample") : tr("%1 samples").arg(m_preview.samples),
                     m_preview.keys.join(QStringLiteral(", ")), m_preview.examples.join(QStringLiteral("; "))));
    }
    setVisible(offer);
}

QString StdoutOffer::text() const
{
    return isVisibleTo(parentWidget()) ? m_text->text() : QString();
}

} // namespace accel::app
