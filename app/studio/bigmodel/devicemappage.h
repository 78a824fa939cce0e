// Big Models → Device Map: pick a model folder or config.json, device budgets (this machine, typed
// "0=10GiB,cpu=30GiB", or another host's `accel env --json`), strategy, dtype and no-split classes;
// plans with inferAutoDeviceMap on a worker thread and shows one lane per device. Blocks can be
// dragged to other lanes; the map exports as JSON or as a Python `device_map = {...}` snippet.
#pragma once

#include "app/studio/bigmodel/devicemapplan.h"
#include "app/studio/bigmodel/devicemaprequest.h"

#include <QFutureWatcher>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace accel::app {

class DeviceLanesView;

class DeviceMapPage : public QWidget {
    Q_OBJECT
public:
    explicit DeviceMapPage(QWidget *parent = nullptr);
    ~DeviceMapPage() override;

    void setModelPath(const QString &path);
    void setBudgetSpec(const QString &spec);
    void setEnvJsonPath(const QString &path);
    void setStrategy(const QString &strategy);
    void setDType(const QString &dtype);
    void setNoSplit(const QStringList &classes);
    DeviceMapRequest request() const;

    // Starts planning on a worker thread; planned() or planFailed() follows.
    void plan();
    bool isPlanning() const;

    const DeviceMapPlan &currentPlan() const { return m_plan; }
    DeviceLanesView *lanesView() const { return m_view; }
    QString summaryText() const;
    QString errorText() const;

    // Moves a module to another device and re-checks the budgets. Moves can be undone (Undo
    // button, Ctrl+Z) back to the plan as computed; a new plan clears the history.
    bool moveModule(const QString &name, const QString &device);
    bool undoMove();
    int undoDepth() const { return int(m_undo.size()); }

    QString exportJson() const;
    QString exportPython() const;
    bool saveExport(const QString &path, bool python, QString *error = nullptr) const;

Q_SIGNALS:
    void planned();
    void planFailed(const QString &message);
    void planChanged();
    void statusMessage(const QString &message);

private:
    void buildUi();
    void browseModel(bool folder);
    void browseEnvJson();
    void finishPlanning();
    void refresh();
    void copyExport(bool python);
    void saveExportDialog(bool python);

    QLineEdit *m_model = nullptr;
    QComboBox *m_budgetSource = nullptr;
    QLineEdit *m_budgetSpec = nullptr;
    QLineEdit *m_envJson = nullptr;
    QComboBox *m_strategy = nullptr;
    QComboBox *m_dtype = nullptr;
    QLineEdit *m_noSplit = nullptr;
    QPushButton *m_planButton = nullptr;
    QLabel *m_status = nullptr;
    QLabel *m_summary = nullptr;
    DeviceLanesView *m_view = nullptr;
    QList<QPushButton *> m_exportButtons;
    QPushButton *m_undoButton = nullptr;
    QVector<QPair<QString, QString>> m_undo; // moved module, the device it came from
    QFutureWatcher<DeviceMapOutcome> m_watcher;
    DeviceMapPlan m_plan;
    QString m_error;
    // From plan() until its answer was handled (the worker may have finished while the answer
    // waits in the event queue: the watcher no longer runs, yet nothing is planned).
    bool m_planning = false;
    bool m_replan = false;
};

} // namespace accel::app
