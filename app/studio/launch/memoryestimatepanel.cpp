#include "app/studio/launch/memoryestimatepanel.h"

#include "app/studio/launch/accelquery.h"
#include "app/studio/monitor/axisunits.h"
#include "core/common/fileutil.h"
#include "launcher/jobfile.h"

#include <QFile>
#include <QFormLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

namespace accel::app {

namespace {

const char *const kRows[] = {"parameters_bytes", "gradients_bytes", "optimizer_state_bytes", "total_bytes"};

} // namespace

MemoryEstimatePanel::MemoryEstimatePanel(QWidget *parent) : QWidget(parent)
{
    m_query = new AccelQuery(250, 30000, this);
    connect(m_query, &AccelQuery::due, this, &MemoryEstimatePanel::start);
    connect(m_query, &AccelQuery::answered, this, &MemoryEstimatePanel::show);
    connect(m_query, &AccelQuery::failed, this, &MemoryEstimatePanel::showError);
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

    connect(m_model, &QLineEdit::textChanged, this, [this] {
        if (m_fromField)
            setModelFromField();
    });
    connect(m_processes, &QSpinBox::valueChanged, m_query, &AccelQuery::schedule);
    showError(
        tr("Choose a config file and a model (a built-in recipe, a gpt, mlp or causal_lm job file, or a model folder) "
           "to see the memory each rank will hold."));
}

// A running estimate is killed with its process group (AccelQuery's command).
MemoryEstimatePanel::~MemoryEstimatePanel() = default;

void MemoryEstimatePanel::setAccelProgram(const QString &program)
{
    m_query->setProgram(program);
}

bool MemoryEstimatePanel::isEstimating() const
{
    return m_query->isRunning();
}

void MemoryEstimatePanel::setRecipeJob(const launcher::JobFile &job)
{
    m_fromField = false;
    m_form->setRowVisible(m_model, false); // the job names its model
    m_modelPath.clear();
    const QString path = m_jobDir.filePath(QStringLiteral("job.yaml"));
    // As it is, incomplete too: accel names what is missing.
    if (m_jobDir.isValid() && fileutil::writeFileAtomic(path.toStdString(), job.toYaml()))
        m_modelPath = path;
    m_query->schedule();
}

void MemoryEstimatePanel::setJobFile(const QString &path)
{
    m_fromField = false;
    m_form->setRowVisible(m_model, false); // the job names its model
    m_modelPath = path.trimmed();
    m_query->schedule();
}

void MemoryEstimatePanel::setModelFromField()
{
    m_fromField = true;
    m_form->setRowVisible(m_model, true);
    m_modelPath = m_model->text().trimmed();
    m_query->schedule();
}

void MemoryEstimatePanel::setConfigFile(const QString &path)
{
    m_config = path.trimmed();
    m_query->schedule();
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

void MemoryEstimatePanel::start()
{
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
    m_query->run(arguments);
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
    // A LoRA job trains its adapters only: the frozen base has no gradients or optimizer state.
    const qint64 all = qint64(answer.value(QStringLiteral("parameters")).toDouble());
    const qint64 trained = qint64(answer.value(QStringLiteral("trainable_parameters")).toDouble());
    const QString count = answer.contains(QStringLiteral("trainable_parameters")) && trained < all
                              ? tr("%1 (%2 trained)").arg(all).arg(trained)
                              : QString::number(all);
    // The device mesh the figures are per rank of; with tensor parallelism what one tp rank holds.
    const QJsonObject mesh = perRank.value(QStringLiteral("mesh")).toObject();
    QString layout = tr("mesh %1").arg(mesh.value(QStringLiteral("description")).toString());
    if (mesh.value(QStringLiteral("vocab_parallel")).toBool())
        layout += tr(", vocab-parallel embedding and head");
    if (mesh.value(QStringLiteral("sequence_parallel")).toBool())
        layout += tr(", sequence-parallel norms");
    const QJsonObject split = perRank.value(QStringLiteral("tensor_parallel")).toObject();
    if (!split.isEmpty())
        layout += tr("; %1 of the trained parameters on each tp rank")
                      .arg(qint64(split.value(QStringLiteral("parameters_per_rank")).toDouble()));
    m_summary->setText(
        tr("%1, %2 parameters, %3 with %4 on %5 processes:\n%6\n%7")
            .arg(parameters)
            .arg(count)
            .arg(row.value(QStringLiteral("dtype")).toString(), perRank.value(QStringLiteral("optimizer")).toString())
            .arg(perRank.value(QStringLiteral("world_size")).toInt())
            .arg(perRank.value(QStringLiteral("strategy")).toString(), layout));
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
