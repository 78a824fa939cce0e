#include "app/studio/bigmodel/playgroundloadoptions.h"

#include "core/inference/decodebound.h"
#include "core/inference/quantizationmethod.h"
#include "core/inference/workeroptions.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QSpinBox>

namespace accel::app {

namespace {

bool chooseData(QComboBox *box, const QString &value)
{
    const int index = box->findData(value);
    if (index < 0)
        return false;
    box->setCurrentIndex(index);
    return true;
}

} // namespace

PlaygroundLoadOptions::PlaygroundLoadOptions(QWidget *parent) : QWidget(parent)
{
    auto *row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    m_threads = new QSpinBox(this);
    m_threads->setRange(0, 256);
    m_threads->setSpecialValueText(tr("auto"));
    m_threads->setPrefix(tr("threads "));
    m_quantization = new QComboBox(this);
    m_quantization->setObjectName(QStringLiteral("playgroundQuantization"));
    m_quantization->addItem(tr("weights as stored"), QString());
    for (const std::string &method : inference::quantizationMethods())
        m_quantization->addItem(QString::fromStdString(method), QString::fromStdString(method));
    m_quantization->setToolTip(tr("Quantize the Linear layers on load: bitsandbytes' int8 rows, or 4-bit NF4 / FP4 "
                                  "blocks of 64 (weights only). Fewer bytes per token, a higher decode bound."));
    m_dtype = new QComboBox(this);
    m_dtype->setObjectName(QStringLiteral("playgroundDType"));
    m_dtype->addItem(tr("dtype as stored"), QString());
    for (const char *dtype : {inference::kAutoComputeDType, "float32", "bfloat16"})
        m_dtype->addItem(QString::fromLatin1(dtype), QString::fromLatin1(dtype));
    m_dtype->setToolTip(tr("Compute dtype. auto: %1; the choice and its reason show once loaded.")
                            .arg(QString::fromStdString(inference::autoComputeDTypeMeaning())));
    m_pinThreads = new QCheckBox(tr("pin threads"), this);
    m_pinThreads->setObjectName(QStringLiteral("playgroundPinThreads"));
    m_pinThreads->setToolTip(tr("Pin each intra-op thread to its own CPU of the allowed set for decode."));
    row->addWidget(m_threads);
    row->addWidget(m_quantization);
    row->addWidget(m_dtype);
    row->addWidget(m_pinThreads);
    connect(m_quantization, &QComboBox::currentIndexChanged, this, &PlaygroundLoadOptions::quantizationChanged);
}

void PlaygroundLoadOptions::setThreads(int threads)
{
    m_threads->setValue(threads);
}

int PlaygroundLoadOptions::threads() const
{
    return m_threads->value();
}

bool PlaygroundLoadOptions::setQuantization(const QString &method)
{
    return chooseData(m_quantization, method);
}

QString PlaygroundLoadOptions::quantization() const
{
    return m_quantization->currentData().toString();
}

bool PlaygroundLoadOptions::setComputeDType(const QString &dtype)
{
    return chooseData(m_dtype, dtype);
}

QString PlaygroundLoadOptions::computeDType() const
{
    return m_dtype->currentData().toString();
}

void PlaygroundLoadOptions::setPinThreads(bool pin)
{
    m_pinThreads->setChecked(pin);
}

bool PlaygroundLoadOptions::pinThreads() const
{
    return m_pinThreads->isChecked();
}

void PlaygroundLoadOptions::addTo(QJsonObject &request) const
{
    if (threads() > 0)
        request.insert(QStringLiteral("threads"), threads());
    if (!quantization().isEmpty())
        request.insert(QStringLiteral("quantization"), quantization());
    if (!computeDType().isEmpty())
        request.insert(QStringLiteral("dtype"), computeDType());
    if (pinThreads())
        request.insert(QStringLiteral("pin_threads"), true);
}

} // namespace accel::app
