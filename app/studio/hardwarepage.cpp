#include "app/studio/hardwarepage.h"

#include "app/studio/cluster/clustersection.h"
#include "app/studio/hardwarecards.h"

#include <QApplication>
#include <QClipboard>
#include <QDateTime>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QShowEvent>
#include <QTabWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

namespace accel::app {

namespace {

QGroupBox *createSoftwareCard(const hardware::HardwareReport &report, QWidget *parent)
{
    auto *box = new QGroupBox(QObject::tr("Software"), parent);
    box->setObjectName(QStringLiteral("softwareCard"));
    auto *form = new QFormLayout(box);
    auto add = [box, form](const QString &label, const QString &value) {
        auto *valueLabel = new QLabel(value.isEmpty() ? QStringLiteral("—") : value, box);
        valueLabel->setWordWrap(true);
        valueLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
        form->addRow(label, valueLabel);
    };
    const auto &worker = report.worker;
    if (worker.available) {
        add(QObject::tr("Runtime (accel-worker):"),
            QObject::tr("libtorch %1, %2%3")
                .arg(QString::fromStdString(worker.torchVersion),
                     worker.cuda ? QObject::tr("CUDA %1").arg(QString::fromStdString(worker.cudaVersion))
                                 : QObject::tr("CPU only"),
                     worker.gloo ? QObject::tr(", gloo") : QString()));
    } else {
        add(QObject::tr("Runtime (accel-worker):"),
            QObject::tr("not available: %1").arg(QString::fromStdString(worker.error)));
    }
    const auto &python = report.python;
    if (python.available) {
        add(QObject::tr("Python:"), QStringLiteral("%1 (%2)").arg(QString::fromStdString(python.version),
                                                                  QString::fromStdString(python.executable)));
        add(QObject::tr("torch / accelerate:"),
            QStringLiteral("%1 / %2").arg(QString::fromStdString(python.torchVersion),
                                          QString::fromStdString(python.accelerateVersion)));
    } else {
        add(QObject::tr("Python:"), QObject::tr("not available: %1").arg(QString::fromStdString(python.error)));
    }
    return box;
}

QGroupBox *createRecommendationCard(const HardwareDetection &detection, QWidget *parent)
{
    auto *box = new QGroupBox(QObject::tr("Recommended Accelerate config"), parent);
    box->setObjectName(QStringLiteral("recommendationCard"));
    auto *layout = new QVBoxLayout(box);
    if (!detection.recommendationError.empty()) {
        layout->addWidget(new QLabel(
            QObject::tr("No recommendation: %1").arg(QString::fromStdString(detection.recommendationError)), box));
        return box;
    }
    auto *form = new QFormLayout;
    for (const RecommendedKey &key : detection.keys) {
        QString text = QStringLiteral("<b>%1</b>").arg(QString::fromStdString(key.value).toHtmlEscaped());
        if (!key.reason.empty())
            text += QStringLiteral(" — ") + QString::fromStdString(key.reason).toHtmlEscaped();
        auto *value = new QLabel(text, box);
        value->setWordWrap(true);
        value->setObjectName(QStringLiteral("recommendation:%1").arg(QString::fromStdString(key.key)));
        form->addRow(QStringLiteral("%1:").arg(QString::fromStdString(key.key)), value);
    }
    layout->addLayout(form);
    for (const std::string &note : detection.notes) {
        auto *label = new QLabel(QStringLiteral("• ") + QString::fromStdString(note), box);
        label->setWordWrap(true);
        layout->addWidget(label);
    }
    return box;
}
} // namespace

HardwarePage::HardwarePage(QWidget *parent) : QWidget(parent)
{
    // The studio already knows where it is; the Python probe is the slow part but tells which
    // torch/accelerate `accel launch` would run scripts with, so it stays on.
    auto *pageLayout = new QVBoxLayout(this);
    pageLayout->setContentsMargins(0, 0, 0, 0);
    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("hardwareTabs"));
    pageLayout->addWidget(m_tabs);
    auto *machine = new QWidget(m_tabs);
    m_tabs->addTab(machine, tr("This machine"));
    m_cluster = new ClusterSection(m_tabs);
    m_tabs->addTab(m_cluster, tr("Cluster"));
    connect(m_cluster, &ClusterSection::statusMessage, this, &HardwarePage::statusMessage);

    auto *layout = new QVBoxLayout(machine);
    auto *bar = new QHBoxLayout;
    auto *title = new QLabel(tr("<h2>This machine</h2>"), this);
    bar->addWidget(title);
    m_state = new QLabel(tr("Not detected yet."), this);
    m_state->setObjectName(QStringLiteral("detectionState"));
    bar->addWidget(m_state, 1);
    m_refreshButton = new QPushButton(tr("Refresh"), this);
    m_copyButton = new QPushButton(tr("Copy as text"), this);
    m_configureButton = new QPushButton(tr("Open in Configure"), this);
    m_configureButton->setObjectName(QStringLiteral("openInConfigure"));
    m_configureButton->setToolTip(tr("Load the recommended config into the Configure page"));
    m_copyButton->setEnabled(false);
    m_configureButton->setEnabled(false);
    for (QPushButton *button : {m_refreshButton, m_copyButton, m_configureButton})
        bar->addWidget(button);
    layout->addLayout(bar);

    m_scroll = new QScrollArea(this);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    auto *empty = new QLabel(tr("Detecting the hardware of this machine starts when the page is shown."), m_scroll);
    empty->setAlignment(Qt::AlignCenter);
    m_scroll->setWidget(empty);
    layout->addWidget(m_scroll, 1);

    connect(m_refreshButton, &QPushButton::clicked, this, &HardwarePage::refresh);
    connect(m_copyButton, &QPushButton::clicked, this, &HardwarePage::copyAsText);
    connect(m_configureButton, &QPushButton::clicked, this, &HardwarePage::openInConfigureRequested);
    connect(&m_watcher, &QFutureWatcher<HardwareDetection>::finished, this, &HardwarePage::onDetectionFinished);
}

// A running detection holds only copies of its inputs, so the page can go away without waiting
// for it (the thread pool lets it finish in the background).
HardwarePage::~HardwarePage() = default;

void HardwarePage::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    if (!m_shownOnce) {
        m_shownOnce = true;
        if (!m_hasReport && !isDetecting())
            refresh();
    }
}

void HardwarePage::showCluster()
{
    m_tabs->setCurrentWidget(m_cluster);
}

void HardwarePage::refresh()
{
    if (isDetecting())
        return;
    m_state->setText(tr("Detecting…"));
    m_refreshButton->setEnabled(false);
    m_shownOnce = true;
    const hardware::DetectOptions options = m_options;
    m_softwarePending = wantsSoftware(options);
    m_watcher.setFuture(QtConcurrent::run([options] { return detectThisMachine(options); }));
}

bool HardwarePage::isDetecting() const
{
    return m_watcher.isRunning();
}

bool HardwarePage::hasReport() const
{
    return m_hasReport;
}

const hardware::HardwareReport &HardwarePage::report() const
{
    return m_detection.report;
}

config::ClusterConfig HardwarePage::recommendedConfig() const
{
    if (m_hasReport)
        return m_detection.recommended;
    config::ClusterConfig defaults;
    config::applyDefaults(defaults);
    return defaults;
}

QString HardwarePage::reportText() const
{
    return m_hasReport ? QString::fromStdString(hardwareReportText(m_detection)) : QString();
}

void HardwarePage::copyAsText()
{
    if (!m_hasReport)
        return;
    QApplication::clipboard()->setText(reportText());
    Q_EMIT statusMessage(tr("Hardware report copied to the clipboard"));
}

void HardwarePage::onDetectionFinished()
{
    m_detection = m_watcher.result();
    m_hasReport = true;
    rebuildCards();
    if (m_softwarePending) {
        // The hardware is on screen; the Python and runtime probes take a few seconds more.
        m_softwarePending = false;
        m_state->setText(tr("Checking Python and the runtime…"));
        const hardware::DetectOptions options = m_options;
        HardwareDetection partial = m_detection;
        m_watcher.setFuture(QtConcurrent::run([partial, options] { return addSoftware(partial, options); }));
        return;
    }
    m_refreshButton->setEnabled(true);
    m_copyButton->setEnabled(true);
    m_configureButton->setEnabled(m_detection.recommendationError.empty());
    m_state->setText(tr("Detected at %1").arg(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss"))));
    Q_EMIT statusMessage(tr("Hardware detection finished"));
    Q_EMIT detectionFinished();
}

void HardwarePage::rebuildCards()
{
    const hardware::HardwareReport &report = m_detection.report;
    auto *content = new QWidget;
    auto *grid = new QGridLayout(content);
    grid->addWidget(createCpuCard(report.cpu, content), 0, 0);
    grid->addWidget(createMemoryCard(report.memory, report.numaNodes, content), 0, 1);
    grid->addWidget(createGpuCard(report.gpu, content), 1, 0, 1, 2);
    grid->addWidget(createRecommendationCard(m_detection, content), 2, 0, 1, 2);
    grid->addWidget(createDiskCard(report.disks, content), 3, 0);
    grid->addWidget(createSystemCard(report, content), 3, 1);
    grid->addWidget(createSoftwareCard(report, content), 4, 0, 1, 2);
    grid->addWidget(createNetworkCard(report.network, content), 5, 0, 1, 2);
    grid->setRowStretch(6, 1);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
    m_scroll->setWidget(content); // deletes the previous cards
}

} // namespace accel::app
