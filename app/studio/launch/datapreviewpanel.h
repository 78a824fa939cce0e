// The Fine-tune flow's data preview: what a causal_lm job will train on, from `accel preview-data
// JOB [--config_file CONFIG] --json`, asked through AccelQuery (the data read and tokenized with the model's tokenizer
// exactly as accel-worker reads it; the studio never tokenizes or links libtorch itself). Shows the format, token and
// sample counts, the optimizer steps per epoch for the job's batch size on the config's processes, and the first
// samples decoded: text windows with the EOS tokens that separate documents marked, instruction examples with their
// prompt (no loss) marked apart from the completion. Re-read (debounced) whenever the job or the config changes; an
// error shows accel's message.
#pragma once

#include <QJsonObject>
#include <QTemporaryDir>
#include <QWidget>

class QLabel;
class QTextBrowser;

namespace accel::launcher {
class JobFile;
} // namespace accel::launcher

namespace accel::app {

class AccelQuery;

class DataPreviewPanel : public QWidget {
    Q_OBJECT
public:
    explicit DataPreviewPanel(QWidget *parent = nullptr);
    ~DataPreviewPanel() override;

    void setAccelProgram(const QString &program);
    void setJob(const launcher::JobFile &job); // a causal_lm job with model.path and data.train
    void setConfigFile(const QString &path);

    bool isReading() const;
    QJsonObject answer() const { return m_answer; } // the last accel.data-preview object; empty on error
    QString summary() const;                        // the line above the samples, or the error
    QString samplesHtml() const;

Q_SIGNALS:
    void previewed(); // an answer or an error is shown

private:
    void start();
    void show(const QByteArray &json);
    void showError(const QString &text);

    QString m_jobPath; // the job written for preview-data; "" when the job lacks its model or data
    QString m_config;
    QTemporaryDir m_dir;
    AccelQuery *m_query = nullptr;
    QJsonObject m_answer;
    QLabel *m_summary = nullptr;
    QTextBrowser *m_samples = nullptr;
};

// The first samples of an accel.data-preview answer as HTML: decoded text (EOS marked) or prompt
// (marked: no loss) and completion.
QString dataPreviewSamplesHtml(const QJsonObject &answer);

} // namespace accel::app
