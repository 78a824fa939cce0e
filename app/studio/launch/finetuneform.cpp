#include "app/studio/launch/finetuneform.h"

#include "app/studio/launch/datapreviewpanel.h"
#include "core/bigmodel/memorysize.h"
#include "core/bigmodel/modelloader.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMenu>
#include <QRadioButton>
#include <QToolButton>
#include <QVBoxLayout>

namespace accel::app {

namespace {

QString q(const std::string &text)
{
    return QString::fromStdString(text);
}

const char *const kLoraKeys[] = {"lora.r", "lora.alpha", "lora.dropout", "lora.target_modules"};

// A line edit with a button that picks a folder, or (`files`) a file or a folder from its menu.
QWidget *pathRow(QLineEdit *edit, bool files, QWidget *parent)
{
    auto *row = new QWidget(parent);
    auto *layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(edit, 1);
    auto *browse = new QToolButton(row);
    browse->setText(QStringLiteral("..."));
    layout->addWidget(browse);
    auto pick = [edit, parent](bool folder) {
        const QString path = folder ? QFileDialog::getExistingDirectory(parent, QString(), edit->text())
                                    : QFileDialog::getOpenFileName(parent, QString(), edit->text(),
                                                                   QObject::tr("Text data (*.txt *.jsonl);;All (*)"));
        if (!path.isEmpty()) {
            edit->setText(path);
            Q_EMIT edit->textEdited(path);
        }
    };
    if (files) {
        auto *menu = new QMenu(browse);
        menu->addAction(QObject::tr("File (.txt or .jsonl)..."), edit, [pick] { pick(false); });
        menu->addAction(QObject::tr("Folder of files..."), edit, [pick] { pick(true); });
        browse->setMenu(menu);
        browse->setPopupMode(QToolButton::InstantPopup);
    } else {
        QObject::connect(browse, &QToolButton::clicked, edit, [pick] { pick(true); });
    }
    return row;
}

} // namespace

QString defaultLoraTargets(const QString &family)
{
    if (family == QLatin1String("gpt2"))
        return QStringLiteral("c_attn");
    if (family == QLatin1String("llama") || family == QLatin1String("mistral") || family == QLatin1String("qwen2"))
        return QStringLiteral("q_proj, v_proj");
    return {};
}

FineTuneForm::FineTuneForm(QWidget *parent) : QWidget(parent), m_job(launcher::JobFile::defaults("causal_lm"))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto *grid = new QGridLayout;
    layout->addLayout(grid);

    auto *modelBox = new QGroupBox(tr("1. Model"), this);
    auto *modelForm = new QFormLayout(modelBox);
    modelForm->addRow(tr("Folder:"), pathRow(addField(QStringLiteral("model.path"), modelBox), false, modelBox));
    field(QStringLiteral("model.path"))
        ->setPlaceholderText(tr("a Hugging Face folder: config.json, safetensors, "
                                "tokenizer.json"));
    m_modelInfo = new QLabel(modelBox);
    m_modelInfo->setObjectName(QStringLiteral("ftModelInfo"));
    m_modelInfo->setWordWrap(true);
    modelForm->addRow(QString(), m_modelInfo);
    modelForm->addRow(tr("Run name:"), addField(QStringLiteral("name"), modelBox));
    grid->addWidget(modelBox, 0, 0);

    auto *dataBox = new QGroupBox(tr("2. Data"), this);
    auto *dataForm = new QFormLayout(dataBox);
    dataForm->addRow(tr("Training:"), pathRow(addField(QStringLiteral("data.train"), dataBox), true, dataBox));
    field(QStringLiteral("data.train"))->setPlaceholderText(tr(".txt (blank-line-separated), .jsonl, or a folder"));
    dataForm->addRow(tr("Evaluation:"), pathRow(addField(QStringLiteral("data.eval"), dataBox), true, dataBox));
    field(QStringLiteral("data.eval"))->setPlaceholderText(tr("optional: eval loss and perplexity"));
    dataForm->addRow(tr("Block size:"), addField(QStringLiteral("data.block_size"), dataBox));
    m_format = new QComboBox(dataBox);
    m_format->setObjectName(QStringLiteral("data.format"));
    for (const std::string &choice : launcher::JobFile::field("causal_lm", "data.format")->choices)
        m_format->addItem(q(choice), q(choice));
    dataForm->addRow(tr("Format:"), m_format);
    dataForm->addRow(tr("Text field (.jsonl):"), addField(QStringLiteral("data.text_key"), dataBox));
    grid->addWidget(dataBox, 0, 1);

    auto *methodBox = new QGroupBox(tr("3. Method"), this);
    auto *methodLayout = new QVBoxLayout(methodBox);
    m_full = new QRadioButton(tr("Full fine-tuning (every weight trains)"), methodBox);
    m_full->setObjectName(QStringLiteral("ftFull"));
    m_lora = new QRadioButton(tr("LoRA (adapters train, the base stays frozen)"), methodBox);
    m_lora->setObjectName(QStringLiteral("ftLora"));
    auto *methods = new QButtonGroup(methodBox);
    methods->addButton(m_full);
    methods->addButton(m_lora);
    m_full->setChecked(true);
    methodLayout->addWidget(m_full);
    methodLayout->addWidget(m_lora);
    m_loraBox = new QWidget(methodBox);
    auto *loraForm = new QFormLayout(m_loraBox);
    loraForm->setContentsMargins(18, 0, 0, 0);
    loraForm->addRow(tr("Rank r:"), addField(QStringLiteral("lora.r"), m_loraBox));
    loraForm->addRow(tr("Alpha:"), addField(QStringLiteral("lora.alpha"), m_loraBox));
    loraForm->addRow(tr("Dropout:"), addField(QStringLiteral("lora.dropout"), m_loraBox));
    loraForm->addRow(tr("Target layers:"), addField(QStringLiteral("lora.target_modules"), m_loraBox));
    field(QStringLiteral("lora.r"))->setText(QStringLiteral("8"));
    field(QStringLiteral("lora.alpha"))->setText(QStringLiteral("16"));
    field(QStringLiteral("lora.target_modules"))->setPlaceholderText(tr("e.g. q_proj, v_proj or all-linear"));
    m_loraBox->setEnabled(false);
    methodLayout->addWidget(m_loraBox);
    m_checkpointing = new QCheckBox(tr("Gradient checkpointing (recompute each block in backward)"), methodBox);
    m_checkpointing->setObjectName(QStringLiteral("training.gradient_checkpointing"));
    methodLayout->addWidget(m_checkpointing);
    grid->addWidget(methodBox, 1, 0);

    auto *trainingBox = new QGroupBox(tr("4. Training"), this);
    auto *trainingForm = new QFormLayout(trainingBox);
    trainingForm->addRow(tr("Steps:"), addField(QStringLiteral("training.max_steps"), trainingBox));
    trainingForm->addRow(tr("Batch size (per process):"), addField(QStringLiteral("training.batch_size"), trainingBox));
    trainingForm->addRow(tr("Learning rate:"), addField(QStringLiteral("training.learning_rate"), trainingBox));
    trainingForm->addRow(tr("Warm-up steps:"), addField(QStringLiteral("training.warmup_steps"), trainingBox));
    trainingForm->addRow(tr("Evaluate every:"), addField(QStringLiteral("training.eval_every"), trainingBox));
    trainingForm->addRow(tr("Log every:"), addField(QStringLiteral("training.log_every"), trainingBox));
    m_precision = new QComboBox(trainingBox);
    m_precision->setObjectName(QStringLiteral("training.mixed_precision"));
    for (const std::string &choice : launcher::JobFile::field("causal_lm", "training.mixed_precision")->choices)
        m_precision->addItem(choice.empty() ? tr("(from the config)") : q(choice), q(choice));
    trainingForm->addRow(tr("Mixed precision:"), m_precision);
    grid->addWidget(trainingBox, 1, 1);

    m_issues = new QLabel(this);
    m_issues->setObjectName(QStringLiteral("ftIssues"));
    m_issues->setStyleSheet(QStringLiteral("color: #c62828;"));
    m_issues->setWordWrap(true);
    layout->addWidget(m_issues);
    auto *previewBox = new QGroupBox(tr("The data as the model will see it"), this);
    m_preview = new DataPreviewPanel(previewBox);
    (new QVBoxLayout(previewBox))->addWidget(m_preview);
    layout->addWidget(previewBox, 1);

    connect(m_lora, &QRadioButton::toggled, this, [this] {
        if (!m_updating)
            applyLora();
    });
    connect(m_format, &QComboBox::currentIndexChanged, this, [this] {
        if (!m_updating)
            fieldEdited(QStringLiteral("data.format"), m_format->currentData().toString());
    });
    connect(m_precision, &QComboBox::currentIndexChanged, this, [this] {
        if (!m_updating)
            fieldEdited(QStringLiteral("training.mixed_precision"), m_precision->currentData().toString());
    });
    connect(m_checkpointing, &QCheckBox::toggled, this, [this](bool on) {
        if (!m_updating)
            fieldEdited(QStringLiteral("training.gradient_checkpointing"),
                        on ? QStringLiteral("true") : QStringLiteral("false"));
    });
    showJob();
}

QLineEdit *FineTuneForm::addField(const QString &key, QWidget *parent)
{
    auto *edit = new QLineEdit(parent);
    edit->setObjectName(key);
    if (const launcher::JobField *f = launcher::JobFile::field("causal_lm", key.toStdString())) {
        edit->setToolTip(q(f->key + ": " + f->help));
        if (!f->defaultValue.empty())
            edit->setPlaceholderText(tr("default %1").arg(q(f->defaultValue)));
    }
    connect(edit, &QLineEdit::textEdited, this, [this, key](const QString &text) {
        if (key == QLatin1String("lora.target_modules"))
            m_targetsEdited = true;
        fieldEdited(key, text);
    });
    m_fields.insert(key, edit);
    return edit;
}

void FineTuneForm::fieldEdited(const QString &key, const QString &text)
{
    // The LoRA fields reach the job only while LoRA is chosen (lora.* without lora.r is refused).
    if (!key.startsWith(QLatin1String("lora.")) || isLora())
        m_job.setValue(key.toStdString(), text.toStdString());
    if (key == QLatin1String("model.path"))
        readModel();
    jobChanged();
}

void FineTuneForm::setValue(const QString &key, const QString &value)
{
    if (QLineEdit *edit = field(key))
        edit->setText(value);
    if (key == QLatin1String("lora.target_modules"))
        m_targetsEdited = true;
    fieldEdited(key, value);
    if (!key.startsWith(QLatin1String("lora.")))
        showJob();
}

QString FineTuneForm::value(const QString &key) const
{
    return q(m_job.value(key.toStdString()));
}

void FineTuneForm::setModelPath(const QString &path)
{
    setValue(QStringLiteral("model.path"), path);
}

void FineTuneForm::setTrainingData(const QString &path)
{
    setValue(QStringLiteral("data.train"), path);
}

bool FineTuneForm::isLora() const
{
    return m_lora->isChecked();
}

void FineTuneForm::setLora(bool lora)
{
    (lora ? m_lora : m_full)->setChecked(true);
}

void FineTuneForm::applyLora()
{
    m_loraBox->setEnabled(isLora());
    std::vector<std::string> present;
    for (const auto &[key, v] : m_job.values()) {
        if (key.rfind("lora.", 0) == 0)
            present.push_back(key);
    }
    for (const std::string &key : present) // full fine-tuning: no lora key at all (the worker refuses them)
        m_job.setValue(key, {});
    if (isLora()) {
        for (const char *key : kLoraKeys)
            m_job.setValue(key, field(QLatin1String(key))->text().toStdString());
    }
    jobChanged();
}

// The model's family, size and dtype from config.json and the safetensors headers (no weights read).
void FineTuneForm::readModel()
{
    const QString path = value(QStringLiteral("model.path"));
    m_family.clear();
    if (path.isEmpty()) {
        m_modelInfo->clear();
        return;
    }
    auto model = bigmodel::loadModel(path.toStdString());
    if (!model) {
        m_modelInfo->setText(q(model.error().toString()));
        return;
    }
    m_family = q(model->structure.family);
    QString dtype;
    for (const bigmodel::ModelTensor &tensor : model->structure.tensors()) {
        if (!tensor.buffer) {
            dtype = q(bigmodel::torchName(tensor.dtype));
            break;
        }
    }
    QString text = tr("%1: %2 parameters (%3)")
                       .arg(m_family.isEmpty() ? tr("unknown family") : m_family,
                            QLocale::system().toString(qulonglong(model->structure.parameterCount())),
                            q(bigmodel::formatBinarySize(model->structure.storageBytes())));
    if (model->config)
        text += tr(", %1 layers, hidden %2").arg(model->config->numLayers).arg(model->config->hiddenSize);
    if (!dtype.isEmpty())
        text += QStringLiteral(", ") + dtype;
    if (!model->checkpoint)
        text += tr("; no safetensors weights found (config.json alone)");
    m_modelInfo->setText(text);
    const QString targets = defaultLoraTargets(m_family);
    if (!m_targetsEdited && !targets.isEmpty()) {
        field(QStringLiteral("lora.target_modules"))->setText(targets);
        if (isLora())
            m_job.setValue("lora.target_modules", targets.toStdString());
    }
}

QString FineTuneForm::modelSummary() const
{
    return m_modelInfo->text();
}

QString FineTuneForm::issues() const
{
    return m_issues->text();
}

Result<void> FineTuneForm::loadJob(const QString &path)
{
    auto job = launcher::JobFile::load(path.toStdString());
    if (!job)
        return tl::unexpected(job.error());
    if (job->recipe() != "causal_lm")
        return makeError(ErrorCode::InvalidInput,
                         "recipe: the Fine-tune flow edits causal_lm jobs; got \"" + job->recipe() + "\"",
                         path.toStdString());
    setJob(*job);
    return {};
}

void FineTuneForm::setJob(const launcher::JobFile &job)
{
    m_job = job;
    m_targetsEdited = !m_job.value("lora.target_modules").empty();
    showJob();
    readModel();
    jobChanged();
}

// Puts the job's values into the fields.
void FineTuneForm::showJob()
{
    m_updating = true;
    for (auto it = m_fields.begin(); it != m_fields.end(); ++it) {
        const QString v = value(it.key());
        if (!it.key().startsWith(QLatin1String("lora.")) || !v.isEmpty())
            it.value()->setText(v);
    }
    const bool lora = !m_job.value("lora.r").empty();
    (lora ? m_lora : m_full)->setChecked(true);
    m_loraBox->setEnabled(lora);
    m_format->setCurrentIndex(std::max(0, m_format->findData(value(QStringLiteral("data.format")))));
    m_precision->setCurrentIndex(std::max(0, m_precision->findData(value(QStringLiteral("training.mixed_precision")))));
    m_checkpointing->setChecked(value(QStringLiteral("training.gradient_checkpointing")) == QLatin1String("true"));
    m_updating = false;
}

void FineTuneForm::jobChanged()
{
    QStringList lines;
    for (const launcher::FieldIssue &issue : m_job.validate())
        lines << q(issue.key + ": " + issue.message);
    m_issues->setText(lines.join(QLatin1Char('\n')));
    m_issues->setVisible(!lines.isEmpty());
    m_preview->setJob(m_job);
    Q_EMIT changed();
}

void FineTuneForm::setAccelProgram(const QString &program)
{
    m_preview->setAccelProgram(program);
}

void FineTuneForm::setConfigFile(const QString &path)
{
    m_preview->setConfigFile(path);
}

} // namespace accel::app
