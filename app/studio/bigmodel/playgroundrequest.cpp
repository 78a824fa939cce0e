#include "app/studio/bigmodel/playgroundrequest.h"

#include "core/bigmodel/memorysize.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QStringList>

namespace accel::app {

namespace {

QString tr(const char *text)
{
    return QCoreApplication::translate("accel::app::PlaygroundPage", text);
}

// "1, 2 3" -> [1, 2, 3]; empty when the text is not only ids.
QJsonArray parseIds(const QString &text)
{
    QJsonArray ids;
    const QStringList parts = text.split(QRegularExpression(QStringLiteral("[\\s,]+")), Qt::SkipEmptyParts);
    for (const QString &part : parts) {
        bool ok = false;
        const qint64 id = part.toLongLong(&ok);
        if (!ok || id < 0)
            return {};
        ids.append(id);
    }
    return ids;
}

} // namespace

QJsonObject playgroundLoadOptions(const DeviceMapPlan &plan, bool planIsForFolder)
{
    QJsonObject options;
    QJsonValue map = QStringLiteral("auto");
    if (!plan.isEmpty() && planIsForFolder) {
        const QJsonObject planJson = QJsonDocument::fromJson(plan.toJson()).object();
        if (planJson.value(QStringLiteral("device_map")).isObject())
            map = planJson.value(QStringLiteral("device_map"));
    }
    options.insert(QStringLiteral("device_map"), map);
    return options;
}

QString playgroundDecodeBoundText(const QJsonObject &loaded)
{
    QStringList parts;
    const auto size = [](double bytes) {
        return QString::fromStdString(bigmodel::formatBinarySize(static_cast<uint64_t>(bytes)));
    };
    const QJsonObject quantization = loaded.value(QStringLiteral("quantization")).toObject();
    if (!quantization.isEmpty())
        parts << tr("%1: %2 Linear layers quantized (%3 for %4 in float32).")
                     .arg(quantization.value(QStringLiteral("method")).toString())
                     .arg(quantization.value(QStringLiteral("quantized_layers")).toInt())
                     .arg(size(quantization.value(QStringLiteral("quantized_bytes")).toDouble()),
                          size(quantization.value(QStringLiteral("float32_bytes")).toDouble()));
    const QJsonObject bound = loaded.value(QStringLiteral("decode_bound")).toObject();
    const double perToken = bound.value(QStringLiteral("weight_bytes_per_token")).toDouble();
    if (perToken > 0) {
        QString text = tr("Decode reads %1 of weights per token").arg(size(perToken));
        if (const double offloaded = bound.value(QStringLiteral("offloaded_bytes_per_token")).toDouble(); offloaded > 0)
            text += tr(" (%1 of them offloaded, brought in each step)").arg(size(offloaded));
        const double bandwidth = bound.value(QStringLiteral("memory_bandwidth_bytes_per_s")).toDouble();
        const double tokens = bound.value(QStringLiteral("tokens_per_s")).toDouble();
        if (bandwidth > 0 && tokens > 0)
            text += tr("; this machine's memory bandwidth (%1 GB/s) bounds it at %2 tokens/s.")
                        .arg(bandwidth / 1e9, 0, 'f', 1)
                        .arg(tokens, 0, 'f', 1);
        else
            text += QLatin1Char('.');
        parts << text;
    }
    return parts.join(QLatin1Char(' '));
}

QString playgroundDecodeChoiceText(const QJsonObject &loaded)
{
    QStringList parts;
    const QJsonObject choice = loaded.value(QStringLiteral("dtype_choice")).toObject();
    if (!choice.isEmpty())
        parts << tr("dtype auto: %1 (%2).")
                     .arg(choice.value(QStringLiteral("dtype")).toString(),
                          choice.value(QStringLiteral("reason")).toString());
    if (loaded.contains(QStringLiteral("pinned_cpus"))) {
        QStringList cpus;
        for (const QJsonValue &cpu : loaded.value(QStringLiteral("pinned_cpus")).toArray())
            cpus << QString::number(cpu.toInt());
        parts << QCoreApplication::translate("accel::app::PlaygroundPage", "%n intra-op thread(s) pinned to CPUs %1.",
                                             nullptr, int(cpus.size()))
                     .arg(cpus.join(QStringLiteral(", ")));
    }
    return parts.join(QLatin1Char(' '));
}

QString playgroundClusterText(const QJsonObject &result, const QJsonObject &launchReport)
{
    QStringList stages;
    const QJsonArray nodes = launchReport.value(QStringLiteral("nodes")).toArray();
    const auto hostOf = [&](int rank) {
        for (const QJsonValue &node : nodes)
            if (node.toObject().value(QStringLiteral("machine_rank")).toInt() == rank)
                return node.toObject().value(QStringLiteral("host")).toString();
        return tr("rank %1").arg(rank);
    };
    const QJsonObject pipeline = result.value(QStringLiteral("pipeline")).toObject();
    for (const QJsonValue &value : pipeline.value(QStringLiteral("stages")).toArray()) {
        const QJsonObject stage = value.toObject();
        const QJsonArray layers = stage.value(QStringLiteral("layers")).toArray();
        stages << tr("%1: layers %2-%3 (%4)")
                      .arg(hostOf(stage.value(QStringLiteral("rank")).toInt()))
                      .arg(layers.at(0).toInt())
                      .arg(layers.at(1).toInt() - 1)
                      .arg(QString::fromStdString(bigmodel::formatBinarySize(
                          static_cast<uint64_t>(stage.value(QStringLiteral("resident_bytes")).toDouble()))));
    }
    const QJsonObject stats = result.value(QStringLiteral("stats")).toObject();
    return tr("Generated across %1 hosts, one pipeline stage each: %2. %3 tokens, %4 tokens/s.")
        .arg(stages.size())
        .arg(stages.join(QStringLiteral("; ")))
        .arg(stats.value(QStringLiteral("new_tokens")).toInt())
        .arg(stats.value(QStringLiteral("decode_tokens_per_second")).toDouble(), 0, 'f', 1);
}

QString addPlaygroundPrompt(QJsonObject &request, const QString &text, bool asTokenIds)
{
    if (asTokenIds) {
        const QJsonArray ids = parseIds(text);
        if (ids.isEmpty())
            return tr("This model has no tokenizer.json: type the prompt as token ids, e.g. \"1, 2, 3\".");
        request.insert(QStringLiteral("input_ids"), ids);
        return {};
    }
    if (text.isEmpty())
        return tr("Type a prompt first.");
    request.insert(QStringLiteral("prompt"), text);
    return {};
}

QString playgroundMemoryText(const DeviceMapPlan &plan, const QJsonObject &loaded, qint64 workerPid)
{
    QStringList parts;
    for (const MapLane &lane : plan.lanes()) {
        if (lane.blocks.isEmpty())
            continue;
        const bool gpu = !lane.device.isEmpty() && lane.device.at(0).isDigit();
        const QString device = gpu ? tr("GPU %1").arg(lane.device) : lane.device;
        parts << tr("%1: %2 in %3 entries")
                     .arg(device, QString::fromStdString(bigmodel::formatBinarySize(lane.used)))
                     .arg(lane.blocks.size());
    }
    QString text = parts.isEmpty() ? QString() : tr("Planned: %1.").arg(parts.join(QStringLiteral(", ")));
    if (!loaded.isEmpty()) {
        text += (text.isEmpty() ? QString() : QStringLiteral(" ")) +
                tr("Worker (pid %1): %2 resident tensors (%3 zero-copy), %4 offloaded.")
                    .arg(workerPid)
                    .arg(loaded.value(QStringLiteral("resident_tensors")).toInt())
                    .arg(loaded.value(QStringLiteral("zero_copy_tensors")).toInt())
                    .arg(loaded.value(QStringLiteral("offloaded_tensors")).toInt());
    }
    return text;
}

} // namespace accel::app
