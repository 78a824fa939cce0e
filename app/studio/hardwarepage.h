// The Hardware page: cards for this machine's CPU, memory/NUMA, disks, network and GPUs, the
// software stack, and the recommended Accelerate config with its reasons. Detection runs on a
// worker thread (QtConcurrent); the page stays responsive and shows "Detecting…" meanwhile.
// A second tab, Cluster (ClusterSection), checks the hosts of a multi-node cluster over SSH.
#pragma once

#include "app/studio/hardwaredetection.h"

#include <QFutureWatcher>
#include <QWidget>

class QLabel;
class QPushButton;
class QScrollArea;
class QTabWidget;

namespace accel::app {

class ClusterSection;

class HardwarePage : public QWidget {
    Q_OBJECT
public:
    explicit HardwarePage(QWidget *parent = nullptr);
    ~HardwarePage() override;

    // Options for the next detection (tests switch off the slow Python probe).
    void setDetectOptions(const hardware::DetectOptions &options) { m_options = options; }
    // Starts detection on a worker thread; ignored while one is running.
    void refresh();
    bool isDetecting() const;
    bool hasReport() const;
    const hardware::HardwareReport &report() const;
    // The recommended config for this machine (Accelerate's defaults until a report exists).
    config::ClusterConfig recommendedConfig() const;
    // The report as plain text (what "Copy as text" puts on the clipboard).
    QString reportText() const;
    void copyAsText();
    // The Cluster tab; showCluster() brings it to the front.
    ClusterSection *clusterSection() const { return m_cluster; }
    void showCluster();

Q_SIGNALS:
    void detectionFinished();
    void openInConfigureRequested();
    void statusMessage(const QString &message);

protected:
    void showEvent(QShowEvent *event) override;

private:
    void onDetectionFinished();
    void rebuildCards();

    hardware::DetectOptions m_options;
    QFutureWatcher<HardwareDetection> m_watcher;
    HardwareDetection m_detection;
    bool m_hasReport = false;
    QLabel *m_state = nullptr;
    QPushButton *m_refreshButton = nullptr;
    QPushButton *m_copyButton = nullptr;
    QPushButton *m_configureButton = nullptr;
    QScrollArea *m_scroll = nullptr;
    QTabWidget *m_tabs = nullptr;
    ClusterSection *m_cluster = nullptr;
    bool m_shownOnce = false;
    bool m_softwarePending = false;
};

} // namespace accel::app
