#include "app/studio/launch/datapreviewpanel.h"

#include "app/studio/launch/accelquery.h"
#include "core/common/fileutil.h"
#include "launcher/jobfile.h"
#include "launcher/jsonoutput.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLocale>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace accel::app {

namespace {

QString number(qint64 value)
{
    return QLocale::system().toString(value);
}

// "1 token", "2,501 tokens".
QString counted(qint64 value, const char *one, const char *many)
{
    return number(value) + QLatin1Char(' ') + QLatin1String(value == 1 ? one : many);
}

// Decoded text as HTML: escaped, line breaks kept visible, each EOS token marked as a separator.
QString textHtml(const QString &text, const QString &eos)
{
    const QString marker =
        QStringLiteral("<span style=\"background:#d9e8fb; color:#174a8b;\">%1</span>").arg(eos.toHtmlEscaped());
    const QStringList parts = eos.isEmpty() ? QStringList{text} : text.split(eos);
    QStringList html;
    for (const QString &part : parts)
        html << part.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("&#x21b5;<br>"));
    return html.join(marker);
}

} // namespace

QString dataPreviewSamplesHtml(const QJsonObject &answer)
{
    const QString eos = answer.value(QStringLiteral("eos_token")).toString();
    QString html;
    for (const QJsonValue &value : answer.value(QStringLiteral("samples")).toArray()) {
        const QJsonObject sample = value.toObject();
        html += QStringLiteral("<p><b>%1</b> <span style=\"color:#777;\">(%2)</span><br><code>")
                    .arg(QCoreApplication::translate("accel::app::DataPreviewPanel", "Sample %1")
                             .arg(sample.value(QStringLiteral("index")).toInteger()),
                         counted(sample.value(QStringLiteral("tokens")).toInteger(), "token", "tokens"));
        if (sample.contains(QStringLiteral("text"))) {
            html += textHtml(sample.value(QStringLiteral("text")).toString(), eos);
        } else {
            // The prompt's tokens carry label -100: no loss on them.
            html += QStringLiteral("<span style=\"background:#ececec; color:#707070;\" title=\"%1\">%2</span>")
                        .arg(QCoreApplication::translate("accel::app::DataPreviewPanel", "prompt: no loss"),
                             textHtml(sample.value(QStringLiteral("prompt")).toString(), eos));
            html += textHtml(sample.value(QStringLiteral("completion")).toString(), eos);
        }
        html += QStringLiteral("</code></p>");
    }
    return html;
}

DataPreviewPanel::DataPreviewPanel(QWidget *parent) : QWidget(parent)
{
    // Tokenizing a large dataset takes a while: up to 5 minutes.
    m_query = new AccelQuery(400, 300000, this);
    connect(m_query, &AccelQuery::due, this, &DataPreviewPanel::start);
    connect(m_query, &AccelQuery::answered, this, &DataPreviewPanel::show);
    connect(m_query, &AccelQuery::failed, this, &DataPreviewPanel::showError);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("previewSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summary);
    m_samples = new QTextBrowser(this);
    m_samples->setObjectName(QStringLiteral("previewSamples"));
    m_samples->setMinimumHeight(110);
    m_samples->setVisible(false);
    layout->addWidget(m_samples, 1);
    showError(tr("Choose a model folder and training data to see the samples as the model will see them."));
}

// A running preview is killed with its process group (AccelQuery's command).
DataPreviewPanel::~DataPreviewPanel() = default;

void DataPreviewPanel::setAccelProgram(const QString &program)
{
    m_query->setProgram(program);
}

bool DataPreviewPanel::isReading() const
{
    return m_query->isPending();
}

void DataPreviewPanel::setJob(const launcher::JobFile &job)
{
    m_jobPath.clear();
    const QString path = m_dir.filePath(QStringLiteral("job.yaml"));
    if (!job.value("model.path").empty() && !job.value("data.train").empty() && m_dir.isValid() &&
        fileutil::writeFileAtomic(path.toStdString(), job.toYaml()))
        m_jobPath = path;
    m_query->schedule();
}

void DataPreviewPanel::setConfigFile(const QString &path)
{
    if (path.trimmed() == m_config)
        return;
    m_config = path.trimmed();
    m_query->schedule();
}

QString DataPreviewPanel::summary() const
{
    return m_summary->text();
}

QString DataPreviewPanel::samplesHtml() const
{
    return m_samples->isVisible() ? m_samples->toHtml() : QString();
}

void DataPreviewPanel::start()
{
    if (m_jobPath.isEmpty()) {
        showError(tr("Choose a model folder and training data to see the samples as the model will see them."));
        return;
    }
    QStringList arguments{QStringLiteral("preview-data"), m_jobPath, QStringLiteral("--json")};
    if (!m_config.isEmpty())
        arguments << QStringLiteral("--config_file") << m_config;
    m_summary->setText(tr("Reading and tokenizing the data..."));
    m_query->run(arguments);
}

void DataPreviewPanel::show(const QByteArray &json)
{
    const QJsonObject answer = QJsonDocument::fromJson(json).object();
    if (answer.value(QStringLiteral("schema")).toString() != QLatin1String(launcher::DataPreviewSchema)) {
        showError(tr("accel preview-data gave no preview"));
        return;
    }
    m_answer = answer;
    const QJsonObject train = answer.value(QStringLiteral("train")).toObject();
    const bool text = train.value(QStringLiteral("format")).toString() == QLatin1String("text");
    const qint64 samples = train.value(QStringLiteral("samples")).toInteger();
    QString line =
        tr("%1 data: %2, %3, %4 → %5.")
            .arg(text ? tr("Text") : tr("Instruction"),
                 counted(train.value(QStringLiteral("files")).toInteger(), "file", "files"),
                 text ? counted(train.value(QStringLiteral("documents")).toInteger(), "document", "documents")
                      : counted(train.value(QStringLiteral("documents")).toInteger(), "example", "examples"),
                 counted(train.value(QStringLiteral("tokens")).toInteger(), "token", "tokens"),
                 text ? tr("%1 of %2 tokens")
                            .arg(counted(samples, "window", "windows"))
                            .arg(answer.value(QStringLiteral("block_size")).toInteger())
                      : tr("%1 (prompt tokens without loss)").arg(counted(samples, "example", "examples")));
    if (!text && (train.value(QStringLiteral("cut_examples")).toInteger() > 0 ||
                  train.value(QStringLiteral("dropped_examples")).toInteger() > 0))
        line += QLatin1Char(' ') + tr("%1 cut to the block size, %2 left out (no completion token within it).")
                                       .arg(train.value(QStringLiteral("cut_examples")).toInteger())
                                       .arg(train.value(QStringLiteral("dropped_examples")).toInteger());
    const qint64 steps = answer.value(QStringLiteral("steps_per_epoch")).toInteger();
    line += QLatin1Char(' ') +
            tr("%1 per epoch (batch %2 × %3")
                .arg(counted(steps, "optimizer step", "optimizer steps"))
                .arg(answer.value(QStringLiteral("batch_size")).toInteger())
                .arg(counted(answer.value(QStringLiteral("processes")).toInteger(), "process", "processes"));
    if (answer.value(QStringLiteral("gradient_accumulation_steps")).toInteger() > 1)
        line +=
            tr(", %1 batches per step").arg(answer.value(QStringLiteral("gradient_accumulation_steps")).toInteger());
    line += QLatin1Char(')');
    if (steps > 0)
        line += tr("; %1 steps = %2 epochs.")
                    .arg(answer.value(QStringLiteral("max_steps")).toInteger())
                    .arg(answer.value(QStringLiteral("epochs")).toDouble(), 0, 'f', 1);
    else
        line += tr("; no full batch: the data is shorter than one window.");
    const QJsonObject eval = answer.value(QStringLiteral("eval")).toObject();
    if (!eval.isEmpty())
        line += QLatin1Char(' ') + tr("Evaluation: %1 tokens, %2 samples.")
                                       .arg(number(eval.value(QStringLiteral("tokens")).toInteger()))
                                       .arg(number(eval.value(QStringLiteral("samples")).toInteger()));
    m_summary->setText(line);
    m_samples->setHtml(dataPreviewSamplesHtml(answer));
    m_samples->setVisible(true);
    Q_EMIT previewed();
}

void DataPreviewPanel::showError(const QString &text)
{
    m_answer = {};
    m_samples->clear();
    m_samples->setVisible(false);
    m_summary->setText(text);
    Q_EMIT previewed();
}

} // namespace accel::app
