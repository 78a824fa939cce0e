// The Launch page's Fine-tune flow: a causal_lm job (docs/finetune.md) built in four steps. Pick a
// model folder (its family, parameter count, layers and dtype read from config.json and the
// safetensors headers; the memory each rank will hold is the Launch page's prediction of this job,
// `accel estimate-memory`); pick the training (and evaluation) data, shown as the model will see it
// (DataPreviewPanel, `accel preview-data`); choose full fine-tuning or LoRA (rank, alpha, dropout,
// target layers: peft's default for the family until changed); set the training. Every value goes
// into a launcher::JobFile of the causal_lm recipe, whose schema checks it as accel-worker will;
// the Launch page writes it as the run's job.yaml and launches it like any recipe job.
#pragma once

#include "core/common/result.h"
#include "launcher/jobfile.h"

#include <QHash>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QRadioButton;

namespace accel::app {

class DataPreviewPanel;

class FineTuneForm : public QWidget {
    Q_OBJECT
public:
    explicit FineTuneForm(QWidget *parent = nullptr);

    const launcher::JobFile &job() const { return m_job; }
    // Sets one job key as if typed into its field ("" removes it: the schema's default applies).
    void setValue(const QString &key, const QString &value);
    QString value(const QString &key) const;
    void setModelPath(const QString &path);
    void setTrainingData(const QString &path);
    void setLora(bool lora);
    bool isLora() const;
    Result<void> loadJob(const QString &path); // a causal_lm job file
    void setJob(const launcher::JobFile &job);

    QString modelSummary() const; // "llama: 37,792 parameters, 2 layers, hidden 32, float32" or why not
    QString issues() const;       // the job's problems, one a line ("" when accel-worker accepts it)
    QLineEdit *field(const QString &key) const { return m_fields.value(key); }
    DataPreviewPanel *dataPreview() const { return m_preview; }

    void setAccelProgram(const QString &program);
    void setConfigFile(const QString &path);

Q_SIGNALS:
    void changed();

private:
    QLineEdit *addField(const QString &key, QWidget *parent);
    void fieldEdited(const QString &key, const QString &text);
    void readModel();
    void applyLora();
    void showJob();
    void jobChanged();

    launcher::JobFile m_job;
    QHash<QString, QLineEdit *> m_fields;
    QLabel *m_modelInfo = nullptr;
    QRadioButton *m_full = nullptr;
    QRadioButton *m_lora = nullptr;
    QWidget *m_loraBox = nullptr;
    QComboBox *m_format = nullptr;
    QComboBox *m_precision = nullptr;
    QCheckBox *m_checkpointing = nullptr;
    QLabel *m_issues = nullptr;
    DataPreviewPanel *m_preview = nullptr;
    QString m_family;             // of the model read last
    bool m_targetsEdited = false; // the LoRA targets were typed: no family default replaces them
    bool m_updating = false;
};

// peft's default LoRA target layers for a model family (q_proj, v_proj for the Llama family;
// c_attn for GPT-2), empty when it has none.
QString defaultLoraTargets(const QString &family);

} // namespace accel::app
