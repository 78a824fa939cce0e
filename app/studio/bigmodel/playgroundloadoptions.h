// The Playground's load options beside the model folder: intra-op threads, quantization on load,
// the compute dtype (as stored, auto, float32, bfloat16) and pinned threads, as `accel generate`
// takes them (--threads, --quantization, --dtype, --pin_threads). addTo() puts them into a serve
// load request (docs/worker-protocol.md); the split-across-hosts generation passes the same fields.
#pragma once

#include <QJsonObject>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QSpinBox;

namespace accel::app {

class PlaygroundLoadOptions : public QWidget {
    Q_OBJECT
public:
    explicit PlaygroundLoadOptions(QWidget *parent = nullptr);

    void setThreads(int threads);
    int threads() const;
    // "" (weights as stored) or a method of quantizationmethod.h; false for anything else.
    bool setQuantization(const QString &method);
    QString quantization() const;
    // "" (the checkpoint's), "auto", "float32" or "bfloat16"; false for anything else.
    bool setComputeDType(const QString &dtype);
    QString computeDType() const;
    void setPinThreads(bool pin);
    bool pinThreads() const;

    // "threads" (above 0), "quantization", "dtype" and "pin_threads" when chosen.
    void addTo(QJsonObject &request) const;

Q_SIGNALS:
    void quantizationChanged();

private:
    QSpinBox *m_threads = nullptr;
    QComboBox *m_quantization = nullptr;
    QComboBox *m_dtype = nullptr;
    QCheckBox *m_pinThreads = nullptr;
};

} // namespace accel::app
