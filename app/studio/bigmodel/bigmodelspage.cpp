#include "app/studio/bigmodel/bigmodelspage.h"

#include "app/studio/bigmodel/devicemappage.h"
#include "app/studio/bigmodel/playgroundpage.h"

#include <QSettings>

namespace accel::app {

namespace {
const QString kGroup = QStringLiteral("bigmodels/deviceMap/");
const QString kPlaygroundModel = QStringLiteral("bigmodels/playground/model");
} // namespace

BigModelsPage::BigModelsPage(QWidget *parent) : QTabWidget(parent)
{
    setDocumentMode(true);
    m_deviceMap = new DeviceMapPage(this);
    addTab(m_deviceMap, tr("Device Map"));
    connect(m_deviceMap, &DeviceMapPage::statusMessage, this, &BigModelsPage::statusMessage);
    connect(m_deviceMap, &DeviceMapPage::planned, this, &BigModelsPage::saveInputs);
    m_playground = new PlaygroundPage(this);
    addTab(m_playground, tr("Playground"));
    connect(m_playground, &PlaygroundPage::statusMessage, this, &BigModelsPage::statusMessage);
    connect(m_playground, &PlaygroundPage::modelPathChosen, this,
            [](const QString &path) { QSettings().setValue(kPlaygroundModel, path); });
    restoreInputs();
}

void BigModelsPage::openInPlayground(const QString &model, const QString &adapter)
{
    setCurrentWidget(m_playground);
    m_playground->setAdapterPath(adapter);
    m_playground->setModelPath(model);
}

void BigModelsPage::restoreInputs()
{
    QSettings settings;
    const QString playgroundModel = settings.value(kPlaygroundModel).toString();
    if (!playgroundModel.isEmpty())
        m_playground->setModelPath(playgroundModel);
    const QString model = settings.value(kGroup + QStringLiteral("model")).toString();
    if (model.isEmpty())
        return;
    m_deviceMap->setModelPath(model);
    const QString envJson = settings.value(kGroup + QStringLiteral("envJson")).toString();
    if (!envJson.isEmpty())
        m_deviceMap->setEnvJsonPath(envJson);
    m_deviceMap->setBudgetSpec(settings.value(kGroup + QStringLiteral("budgets")).toString());
    m_deviceMap->setStrategy(settings.value(kGroup + QStringLiteral("strategy"), QStringLiteral("auto")).toString());
    m_deviceMap->setDType(settings.value(kGroup + QStringLiteral("dtype")).toString());
    m_deviceMap->setNoSplit(settings.value(kGroup + QStringLiteral("noSplit")).toStringList());
    m_deviceMap->plan();
}

void BigModelsPage::saveInputs()
{
    const DeviceMapRequest r = m_deviceMap->request();
    QSettings settings;
    settings.setValue(kGroup + QStringLiteral("model"), r.modelPath);
    settings.setValue(kGroup + QStringLiteral("budgets"), r.budgetSpec);
    settings.setValue(kGroup + QStringLiteral("envJson"), r.envJsonPath);
    settings.setValue(kGroup + QStringLiteral("strategy"), r.strategy);
    settings.setValue(kGroup + QStringLiteral("dtype"), r.dtype);
    settings.setValue(kGroup + QStringLiteral("noSplit"), r.noSplit);
}

} // namespace accel::app
