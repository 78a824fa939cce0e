// The studio's Big Models page: tabs for the Device Map planner and the inference Playground.
// Remembers the Device Map inputs and the Playground's model folder between sessions.
#pragma once

#include <QTabWidget>

namespace accel::app {

class DeviceMapPage;
class PlaygroundPage;

class BigModelsPage : public QTabWidget {
    Q_OBJECT
public:
    explicit BigModelsPage(QWidget *parent = nullptr);

    DeviceMapPage *deviceMapPage() const { return m_deviceMap; }
    PlaygroundPage *playgroundPage() const { return m_playground; }
    // Shows the Playground with `model` (and a LoRA `adapter`, "" for none) chosen, ready to Load.
    void openInPlayground(const QString &model, const QString &adapter);

Q_SIGNALS:
    void statusMessage(const QString &message);

private:
    void restoreInputs();
    void saveInputs();

    DeviceMapPage *m_deviceMap = nullptr;
    PlaygroundPage *m_playground = nullptr;
};

} // namespace accel::app
