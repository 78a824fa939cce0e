#include "app/studio/launch/memoryestimatepanel.h"

#include "app/studio/monitor/axisunits.h"
#include "launcher/accelcommand.h"
#include "launcher/jobfile.h"

#include <QFile>
#include <QFormLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QSaveFile>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

namespace accel::app {

namespace {

const char *const kRows[] = {"parameters_bytes", "gradients_bytes", "optimizer_state_bytes", "total_bytes"};

} // namespace

MemoryEstimatePanel::MemoryEstimatePanel(QWidget *parent) : QWidget(parent)
{
    m_program = launcher::AccelCommand::defaultProgram();
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_form = new QFormLayout;
    auto *form = m_form;
    m_model = new QLineEdit(this);
    m_model->setObjectName(QStringLiteral("estimateModel"));
    m_model->setPlaceholderText(tr("model folder or config.json (for a script's model)"));
    form->addRow(tr("Model:"), m_model);
    m_processes = new QSpinBox(this);
    m_processes->setObjectName(QStringLiteral("estimateProcesses"));
    m_processes->setRange(0, 65536);
    m_processes->setSpecialValueText(tr("as the config"));
    m_processes->setToolTip(tr("Processes in total for the estimate (the launch uses the config's)"));
    form->addRow(tr("Processes:"), m_processes);
    layout->addLayout(form);
    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("estimateSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summary);
    m_table = new QTableWidget(4, 2, this);
    m_table->setObjectName(QStringLiteral("estimateTable"));
    m_table->setVerticalHeaderLabels({tr("Parameters"), tr("Gradients"), tr("Optimizer state"), tr("Total")});
    m_table->setHorizontalHeaderLabels({tr("Per rank"), tr("DDP per rank")});
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->setMaximumHeight(m_table->verticalHeader()->length() + m_table->horizontalHeader()->height() + 4);
    m_table->setVisible(false);
    layout->addWidget(m_table);

    m_debounce.setSingleShot(true);
    m_debounce.setInterval(250);
    connect(&m_debounce, &QTimer::timeout, this, &MemoryEstimatePanel::start);
    connect(m_model, &QLineEdit::textChanged, this, [this] {
        if (m_fromField)
            setModelFromField();
    });
    connect(m_processes, &QSpinBox::valueChanged, this, &MemoryEstimatePanel::schedule);
    showError(tr("Choose a config file and a model (a built-in recipe, a gpt/mlp job file, or a model folder) "
                 "to see the memory each rank will hold."));
}

// A running estimate is killed with its process group (AccelCommand's destructor).
MemoryEstimatePanel::~MemoryEstimatePanel() = default;

void MemoryEstimatePanel::setRecipeJob(const launcher::JobFile &job)
{
    m_fromField = false;
    m_form->setRowVisible(m_model, false); // the job names its model
    m_modelPath.clear();
    if (m_jobDir.isValid()) {
        const QString path = m_jobDir.filePath(QStringLiteral("job.yaml"));
        QSaveFile file(path);
        const std::string text = job.toYaml();
        if (file.open(QIODevice::WriteOnly) && file.write(text.data(), qint64(text.size())) == qint64(text.size()) &&
            file.commit())
            m_modelPath = path;
    }
    schedule();
}

void MemoryEstimatePanel::setJobFile(const QString &path)
{
    m_fromField = false;
    m_form->setRowVisible(m_model, false); // the job names its model
    m_modelPath = path.trimmed();
    schedule();
}

void MemoryEstimatePanel::setModelFromField()
{
    m_fromField = true;
    m_form->setRowVisible(m_model, true);
    m_modelPath = m_model->text().trimmed();
    schedule();
}

void MemoryEstimatePanel::setConfigFile(const QString &path)
{
    m_config = path.trimmed();
    schedule();
}

void MemoryEstimatePanel::setProcesses(int processes)
{
    m_processes->setValue(processes);
}

int MemoryEstimatePanel::processes() const
{
    return m_processes->value();
}

QString MemoryEstimatePanel::message() const
{
    return m_summary->text();
}

void MemoryEstimatePanel::schedule()
{
    m_debounce.start();
}

void MemoryEstimatePanel::start()
{
    if (m_command) {
        m_again = true; // the answer would be stale: ask again when it is in
        return;
    }
    if (m_config.isEmpty() || m_modelPath.isEmpty()) {
        showError(m_config.isEmpty() ? tr("Choose a config file to see the memory each rank will hold.")
                                     : tr("Name a model folder (or config.json) to see the memory each rank will "
                                          "hold."));
        return;
    }
    QStringList arguments{QStringLiteral("estimate-memory"), m_modelPath, QStringLiteral("--config_file"), m_config,
                          QStringLiteral("--json")};
    if (!m_modelPath.endsWith(QLatin1String(".yaml")) && !m_modelPath.endsWith(QLatin1String(".yml")))
        arguments << QStringLiteral("--dtypes") << QStringLiteral("float32");
    if (m_processes->value() > 0)
        arguments << QStringLiteral("--num_processes") << QString::number(m_processes->value());
    m_summary->setText(tr("Estimating..."));
    m_command = new launcher::AccelCommand(this);
    m_command->setProgram(m_program);
    m_command->setTimeout(30000);
    connect(m_command, &launcher::AccelCommand::done, this, [this](const launcher::AccelOutcome &outcome) {
        m_command->deleteLater();
        m_command = nullptr;
        if (m_again) {
            m_again = false;
            start();
            return;
        }
        if (outcome.succeeded())
            show(outcome.standardOutput);
        else
            showError(outcome.standardError.trimmed().isEmpty() ? outcome.describe()
                                                                : QString::fromUtf8(outcome.standardError.trimmed()));
    });
    m_command->start(arguments);
}

void MemoryEstimatePanel::show(const QByteArray &json)
{
    const QJsonObject answer = QJsonDocument::fromJson(json).object();
    const QJsonObject perRank = answer.value(QStringLiteral("per_rank_training")).toObject();
    const QJsonArray rows = perRank.value(QStringLiteral("rows")).toArray();
    if (rows.isEmpty()) {
        showError(tr("accel estimate-memory gave no per-rank figures"));
        return;
    }
    const QJsonObject row = rows.first().toObject();
    const QJsonObject ddp = row.value(QStringLiteral("ddp")).toObject();
    for (int i = 0; i < 4; ++i) {
        const QString key = QLatin1String(kRows[i]);
        m_table->setItem(i, 0, new QTableWidgetItem(formatBytes(row.value(key).toDouble())));
        m_table->setItem(i, 1, new QTableWidgetItem(formatBytes(ddp.value(key).toDouble())));
    }
    m_total = qint64(row.value(QStringLiteral("total_bytes")).toDouble());
    m_ddpTotal = qint64(ddp.value(QStringLiteral("total_bytes")).toDouble());
    const QString parameters = answer.value(QStringLiteral("recipe")).isString()
                                   ? tr("%1 (%2)").arg(answer.value(QStringLiteral("recipe")).toString(),
                                                       answer.value(QStringLiteral("shape")).toString())
                                   : answer.value(QStringLiteral("model")).toString();
    m_summary->setText(
        tr("%1, %2 parameters, %3 with %4 on %5 processes:\n%6")
            .arg(parameters)
            .arg(qint64(answer.value(QStringLiteral("parameters")).toDouble()))
            .arg(row.value(QStringLiteral("dtype")).toString(), perRank.value(QStringLiteral("optimizer")).toString())
            .arg(perRank.value(QStringLiteral("world_size")).toInt())
            .arg(perRank.value(QStringLiteral("strategy")).toString()));
    m_table->setVisible(true);
    Q_EMIT estimated();
}

void MemoryEstimatePanel::showError(const QString &text)
{
    m_total = -1;
    m_ddpTotal = -1;
    m_table->setVisible(false);
    m_summary->setText(text);
    Q_EMIT estimated();
}

} // namespace accel::app
