// The studio's Big Models page: tabs for the Device Map planner (and the inference playground).
// Remembers the Device Map inputs between sessions and plans the last model when opened.
#pragma once

#include <QTabWidget>

namespace accel::app {

class DeviceMapPage;

class BigModelsPage : public QTabWidget {
    Q_OBJECT
public:
    explicit BigModelsPage(QWidget *parent = nullptr);

    DeviceMapPage *deviceMapPage() const { return m_deviceMap; }

Q_SIGNALS:
    void statusMessage(const QString &message);

private:
    void restoreInputs();
    void saveInputs();

    DeviceMapPage *m_deviceMap = nullptr;
};

} // namespace accel::app
