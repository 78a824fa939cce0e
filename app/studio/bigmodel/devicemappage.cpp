#include "app/studio/bigmodel/devicemappage.h"

#include "app/studio/bigmodel/devicelanesview.h"
#include "core/bigmodel/memorysize.h"
#include "core/common/fileutil.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>
#include <QtConcurrent>

namespace accel::app {

namespace {
enum BudgetSource { MachineBudgets = 0, TypedBudgets = 1, EnvJsonBudgets = 2 };

QString sizeText(uint64_t bytes)
{
    return QString::fromStdString(bigmodel::formatBinarySize(bytes));
}
} // namespace

DeviceMapPage::DeviceMapPage(QWidget *parent) : QWidget(parent)
{
    buildUi();
    connect(&m_watcher, &QFutureWatcher<DeviceMapOutcome>::finished, this, &DeviceMapPage::finishPlanning);
}

DeviceMapPage::~DeviceMapPage()
{
    m_watcher.waitForFinished();
}

void DeviceMapPage::buildUi()
{
    auto *layout = new QVBoxLayout(this);
    auto *form = new QFormLayout;

    auto *modelRow = new QHBoxLayout;
    m_model = new QLineEdit(this);
    m_model->setObjectName(QStringLiteral("modelPath"));
    m_model->setPlaceholderText(tr("model folder, .safetensors, index .json, config.json or Hub id ORG/NAME"));
    auto *browseFolder = new QPushButton(tr("Folder…"), this);
    auto *browseFile = new QPushButton(tr("File…"), this);
    modelRow->addWidget(m_model, 1);
    modelRow->addWidget(browseFolder);
    modelRow->addWidget(browseFile);
    form->addRow(tr("Model"), modelRow);
    connect(browseFolder, &QPushButton::clicked, this, [this] { browseModel(true); });
    connect(browseFile, &QPushButton::clicked, this, [this] { browseModel(false); });

    auto *budgetRow = new QHBoxLayout;
    m_budgetSource = new QComboBox(this);
    m_budgetSource->addItems({tr("This machine"), tr("Typed budgets"), tr("Another host's env JSON")});
    m_budgetSpec = new QLineEdit(this);
    m_budgetSpec->setObjectName(QStringLiteral("budgetSpec"));
    m_budgetSpec->setPlaceholderText(QStringLiteral("0=10GiB,1=10GiB,cpu=30GiB"));
    m_envJson = new QLineEdit(this);
    m_envJson->setPlaceholderText(tr("`accel env --json` output"));
    auto *browseEnv = new QPushButton(tr("…"), this);
    budgetRow->addWidget(m_budgetSource);
    budgetRow->addWidget(m_budgetSpec, 1);
    budgetRow->addWidget(m_envJson, 1);
    budgetRow->addWidget(browseEnv);
    form->addRow(tr("Budgets"), budgetRow);
    auto syncSource = [this, browseEnv] {
        const int source = m_budgetSource->currentIndex();
        m_budgetSpec->setVisible(source == TypedBudgets);
        m_envJson->setVisible(source == EnvJsonBudgets);
        browseEnv->setVisible(source == EnvJsonBudgets);
    };
    connect(m_budgetSource, &QComboBox::currentIndexChanged, this, syncSource);
    connect(browseEnv, &QPushButton::clicked, this, &DeviceMapPage::browseEnvJson);
    syncSource();

    auto *optionsRow = new QHBoxLayout;
    m_strategy = new QComboBox(this);
    m_strategy->addItems({QStringLiteral("auto"), QStringLiteral("balanced"), QStringLiteral("balanced_low_0"),
                          QStringLiteral("sequential")});
    m_dtype = new QComboBox(this);
    m_dtype->addItem(tr("as stored"), QString());
    for (const char *d : {"float32", "float16", "bfloat16", "fp8", "int8", "int4"})
        m_dtype->addItem(QString::fromLatin1(d), QString::fromLatin1(d));
    m_noSplit = new QLineEdit(this);
    m_noSplit->setPlaceholderText(tr("no-split classes (default: the family's block)"));
    m_planButton = new QPushButton(tr("Plan"), this);
    m_planButton->setDefault(true);
    optionsRow->addWidget(new QLabel(tr("Strategy"), this));
    optionsRow->addWidget(m_strategy);
    optionsRow->addWidget(new QLabel(tr("dtype"), this));
    optionsRow->addWidget(m_dtype);
    optionsRow->addWidget(m_noSplit, 1);
    optionsRow->addWidget(m_planButton);
    form->addRow(tr("Options"), optionsRow);
    layout->addLayout(form);
    connect(m_planButton, &QPushButton::clicked, this, &DeviceMapPage::plan);
    connect(m_model, &QLineEdit::returnPressed, this, &DeviceMapPage::plan);

    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_status);

    m_view = new DeviceLanesView(this);
    m_view->setEmptyText(tr("Choose a model and press Plan to see its device map."));
    auto *scroll = new QScrollArea(this);
    scroll->setWidget(m_view);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    layout->addWidget(scroll, 1);
    connect(m_view, &DeviceLanesView::blockDropped, this,
            [this](const QString &name, const QString &device) { moveModule(name, device); });

    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);

    auto *exportRow = new QHBoxLayout;
    m_undoButton = new QPushButton(tr("Undo move"), this);
    m_undoButton->setObjectName(QStringLiteral("undoMove"));
    m_undoButton->setToolTip(tr("Put the last moved module back (Ctrl+Z)"));
    m_undoButton->setEnabled(false);
    connect(m_undoButton, &QPushButton::clicked, this, &DeviceMapPage::undoMove);
    exportRow->addWidget(m_undoButton);
    auto *undo = new QAction(this);
    undo->setShortcut(QKeySequence::Undo);
    undo->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(undo, &QAction::triggered, this, &DeviceMapPage::undoMove);
    addAction(undo);
    exportRow->addStretch(1);
    const QList<QPair<QString, std::function<void()>>> actions = {
        {tr("Copy JSON"), [this] { copyExport(false); }},
        {tr("Save JSON…"), [this] { saveExportDialog(false); }},
        {tr("Copy Python"), [this] { copyExport(true); }},
        {tr("Save Python…"), [this] { saveExportDialog(true); }},
    };
    for (const auto &[label, action] : actions) {
        auto *button = new QPushButton(label, this);
        button->setEnabled(false);
        connect(button, &QPushButton::clicked, this, action);
        exportRow->addWidget(button);
        m_exportButtons << button;
    }
    layout->addLayout(exportRow);
}

void DeviceMapPage::setModelPath(const QString &path)
{
    m_model->setText(path);
}

void DeviceMapPage::setBudgetSpec(const QString &spec)
{
    m_budgetSpec->setText(spec);
    m_budgetSource->setCurrentIndex(spec.trimmed().isEmpty() ? MachineBudgets : TypedBudgets);
}

void DeviceMapPage::setEnvJsonPath(const QString &path)
{
    m_envJson->setText(path);
    m_budgetSource->setCurrentIndex(path.isEmpty() ? MachineBudgets : EnvJsonBudgets);
}

void DeviceMapPage::setStrategy(const QString &strategy)
{
    m_strategy->setCurrentText(strategy);
}

void DeviceMapPage::setDType(const QString &dtype)
{
    const int i = m_dtype->findData(dtype);
    m_dtype->setCurrentIndex(i < 0 ? 0 : i);
}

void DeviceMapPage::setNoSplit(const QStringList &classes)
{
    m_noSplit->setText(classes.join(QStringLiteral(", ")));
}

DeviceMapRequest DeviceMapPage::request() const
{
    DeviceMapRequest r;
    r.modelPath = m_model->text();
    if (m_budgetSource->currentIndex() == TypedBudgets)
        r.budgetSpec = m_budgetSpec->text();
    if (m_budgetSource->currentIndex() == EnvJsonBudgets)
        r.envJsonPath = m_envJson->text();
    r.strategy = m_strategy->currentText();
    r.dtype = m_dtype->currentData().toString();
    for (const QString &c : m_noSplit->text().split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts))
        r.noSplit << c;
    return r;
}

void DeviceMapPage::plan()
{
    if (m_planning) {
        m_replan = true; // plan again with the newest inputs when this one ends
        return;
    }
    m_planning = true;
    m_status->setText(tr("Planning…"));
    m_watcher.setFuture(QtConcurrent::run(computeDeviceMap, request()));
}

bool DeviceMapPage::isPlanning() const
{
    return m_planning;
}

void DeviceMapPage::finishPlanning()
{
    if (m_replan) {
        m_replan = false;
        m_watcher.setFuture(QtConcurrent::run(computeDeviceMap, request()));
        return;
    }
    m_planning = false;
    DeviceMapOutcome outcome = m_watcher.result();
    if (!outcome.error.isEmpty()) {
        m_error = outcome.error;
        m_status->setText(QStringLiteral("<span style='color:#b02020'>%1</span>").arg(outcome.error.toHtmlEscaped()));
        Q_EMIT planFailed(outcome.error);
        return;
    }
    m_error.clear();
    m_plan = std::move(outcome.plan);
    m_undo.clear();
    QString status = tr("%1: %2 entries, strategy %3, dtype %4, planned in %5 ms.")
                         .arg(m_plan.model)
                         .arg(m_plan.blocks().size())
                         .arg(m_plan.strategy, m_plan.dtypeName.isEmpty() ? tr("as stored") : m_plan.dtypeName)
                         .arg(outcome.elapsedMs);
    if (!m_plan.warnings.isEmpty())
        status += QStringLiteral("<br>") + m_plan.warnings.join(QStringLiteral("<br>")).toHtmlEscaped();
    m_status->setText(status);
    refresh();
    Q_EMIT planned();
}

void DeviceMapPage::refresh()
{
    m_view->setPlan(m_plan);
    m_summary->setText(summaryText());
    for (QPushButton *b : m_exportButtons)
        b->setEnabled(!m_plan.isEmpty());
    m_undoButton->setEnabled(!m_undo.isEmpty());
}

QString DeviceMapPage::summaryText() const
{
    if (m_plan.isEmpty())
        return {};
    QStringList parts;
    for (const MapLane &lane : m_plan.lanes()) {
        if (lane.blocks.isEmpty())
            continue;
        parts << tr("%1: %2").arg(lane.device, sizeText(lane.used));
    }
    QString text = tr("Total %1 — %2.").arg(sizeText(m_plan.totalBytes()), parts.join(QStringLiteral(", ")));
    const QStringList over = m_plan.overBudgetDevices();
    if (!over.isEmpty())
        text += QLatin1Char(' ') + tr("Over budget: %1.").arg(over.join(QStringLiteral(", ")));
    return text;
}

QString DeviceMapPage::errorText() const
{
    return m_error;
}

bool DeviceMapPage::moveModule(const QString &name, const QString &device)
{
    const int index = m_plan.blockIndex(name);
    const QString from = index >= 0 ? m_plan.blocks().at(index).device : QString();
    if (from == device || !m_plan.moveBlock(name, device))
        return false;
    m_undo.append({name, from});
    refresh();
    Q_EMIT statusMessage(tr("Moved %1 to %2").arg(name.isEmpty() ? tr("the whole model") : name, device));
    Q_EMIT planChanged();
    return true;
}

bool DeviceMapPage::undoMove()
{
    if (m_undo.isEmpty())
        return false;
    const auto [name, device] = m_undo.takeLast();
    if (!m_plan.moveBlock(name, device))
        return false;
    refresh();
    Q_EMIT statusMessage(tr("Moved %1 back to %2").arg(name.isEmpty() ? tr("the whole model") : name, device));
    Q_EMIT planChanged();
    return true;
}

QString DeviceMapPage::exportJson() const
{
    return QString::fromUtf8(m_plan.toJson());
}

QString DeviceMapPage::exportPython() const
{
    return m_plan.toPython();
}

bool DeviceMapPage::saveExport(const QString &path, bool python, QString *error) const
{
    auto written =
        fileutil::writeFileAtomic(path.toStdString(), (python ? exportPython() : exportJson()).toStdString());
    if (!written && error)
        *error = QString::fromStdString(written.error().toString());
    return static_cast<bool>(written);
}

void DeviceMapPage::browseModel(bool folder)
{
    const QString path = folder ? QFileDialog::getExistingDirectory(this, tr("Model folder"), m_model->text())
                                : QFileDialog::getOpenFileName(this, tr("Model file"), m_model->text(),
                                                               tr("Models (*.json *.safetensors);;All files (*)"));
    if (path.isEmpty())
        return;
    m_model->setText(path);
    plan();
}

void DeviceMapPage::browseEnvJson()
{
    const QString path = QFileDialog::getOpenFileName(this, tr("accel env --json output"), m_envJson->text(),
                                                      tr("JSON (*.json);;All files (*)"));
    if (!path.isEmpty())
        m_envJson->setText(path);
}

void DeviceMapPage::copyExport(bool python)
{
    QApplication::clipboard()->setText(python ? exportPython() : exportJson());
    Q_EMIT statusMessage(python ? tr("Copied the Python device_map") : tr("Copied the device map JSON"));
}

void DeviceMapPage::saveExportDialog(bool python)
{
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Save device map"), python ? tr("device_map.py") : tr("device_map.json"),
                                     python ? tr("Python (*.py)") : tr("JSON (*.json)"));
    if (path.isEmpty())
        return;
    QString error;
    if (!saveExport(path, python, &error))
        m_status->setText(QStringLiteral("<span style='color:#b02020'>%1</span>").arg(error.toHtmlEscaped()));
    else
        Q_EMIT statusMessage(tr("Saved %1").arg(path));
}

} // namespace accel::app
