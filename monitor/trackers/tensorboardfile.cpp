#include "monitor/trackers/tensorboardfile.h"

#include "tensorboard.pb.h" // generated from tensorboard.proto

#include <QDir>
#include <QFileInfo>

#include <cmath>
#include <cstring>

namespace accel::trackers {

namespace pb = accel::trackers::tensorboard;

namespace {

double halfToDouble(std::uint16_t bits)
{
    const int exponent = (bits >> 10) & 0x1f;
    const int mantissa = bits & 0x3ff;
    const double sign = (bits & 0x8000) ? -1.0 : 1.0;
    if (exponent == 0)
        return sign * std::ldexp(mantissa, -24);
    if (exponent == 31)
        return mantissa ? std::nan("") : sign * INFINITY;
    return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

double bfloat16ToDouble(std::uint16_t bits)
{
    const std::uint32_t wide = std::uint32_t(bits) << 16;
    float value = 0;
    std::memcpy(&value, &wide, sizeof value);
    return value;
}

template <typename T>
std::optional<T> contentValue(const std::string &content)
{
    if (content.size() != sizeof(T))
        return std::nullopt;
    T value; // tensor_content is little-endian, as this machine
    std::memcpy(&value, content.data(), sizeof value);
    return value;
}

// The value of a one-element numeric tensor; nullopt for anything else.
std::optional<double> tensorScalar(const pb::TensorProto &tensor)
{
    qint64 elements = 1;
    for (const auto &dim : tensor.tensor_shape().dim())
        elements *= dim.size();
    if (elements != 1)
        return std::nullopt;
    const std::string &content = tensor.tensor_content();
    auto fromContent = [&content](auto sample) -> std::optional<double> {
        if (auto value = contentValue<decltype(sample)>(content))
            return static_cast<double>(*value);
        return std::nullopt;
    };
    switch (tensor.dtype()) {
    case pb::DT_FLOAT:
        return tensor.float_val_size() ? std::optional<double>(tensor.float_val(0)) : fromContent(float());
    case pb::DT_DOUBLE:
        return tensor.double_val_size() ? std::optional<double>(tensor.double_val(0)) : fromContent(double());
    case pb::DT_INT32:
    case pb::DT_INT16:
    case pb::DT_INT8:
    case pb::DT_UINT8:
        if (tensor.int_val_size())
            return double(tensor.int_val(0));
        if (tensor.dtype() == pb::DT_INT32)
            return fromContent(std::int32_t());
        if (tensor.dtype() == pb::DT_INT16)
            return fromContent(std::int16_t());
        return tensor.dtype() == pb::DT_INT8 ? fromContent(std::int8_t()) : fromContent(std::uint8_t());
    case pb::DT_INT64:
        return tensor.int64_val_size() ? std::optional<double>(double(tensor.int64_val(0)))
                                       : fromContent(std::int64_t());
    case pb::DT_BOOL:
        return tensor.bool_val_size() ? std::optional<double>(tensor.bool_val(0) ? 1.0 : 0.0)
                                      : fromContent(std::uint8_t());
    case pb::DT_HALF:
    case pb::DT_BFLOAT16: {
        std::optional<std::uint16_t> bits;
        if (tensor.half_val_size())
            bits = static_cast<std::uint16_t>(tensor.half_val(0));
        else
            bits = contentValue<std::uint16_t>(content);
        if (!bits)
            return std::nullopt;
        return tensor.dtype() == pb::DT_HALF ? halfToDouble(*bits) : bfloat16ToDouble(*bits);
    }
    default:
        return std::nullopt;
    }
}

} // namespace

bool isTensorBoardEventFile(const QString &fileName)
{
    return fileName.startsWith(QLatin1String("events.out.tfevents."));
}

std::optional<TensorBoardEvent> decodeTensorBoardEvent(const QByteArray &record)
{
    pb::Event event;
    if (!event.ParseFromArray(record.constData(), static_cast<int>(record.size())))
        return std::nullopt;
    TensorBoardEvent decoded;
    decoded.wallTime = event.wall_time();
    decoded.step = event.step();
    if (!event.has_summary())
        return decoded;
    for (const pb::Summary::Value &value : event.summary().value()) {
        const QString tag = QString::fromStdString(value.tag());
        if (value.value_case() == pb::Summary::Value::kSimpleValue) {
            decoded.scalars.push_back({tag, double(value.simple_value()), true});
        } else if (value.value_case() == pb::Summary::Value::kTensor) {
            const std::string &plugin = value.metadata().plugin_data().plugin_name();
            if (!plugin.empty() && plugin != "scalars")
                continue;
            if (auto scalar = tensorScalar(value.tensor())) {
                const auto dtype = value.tensor().dtype();
                decoded.scalars.push_back(
                    {tag, *scalar, dtype == pb::DT_FLOAT || dtype == pb::DT_HALF || dtype == pb::DT_BFLOAT16});
            }
        }
    }
    return decoded;
}

TensorBoardFile::TensorBoardFile(const QString &path) : m_records(path) {}

bool TensorBoardFile::holdsEventFile(const QString &folder)
{
    auto it = m_writerFolders.find(folder);
    if (it == m_writerFolders.end() || !it->second) // an absent file may appear: asked again
        it = m_writerFolders
                 .insert_or_assign(
                     folder, !QDir(folder).entryList({QStringLiteral("events.out.tfevents.*")}, QDir::Files).isEmpty())
                 .first;
    return it->second;
}

QString TensorBoardFile::keyOf(const QString &tag)
{
    const QString folder = QFileInfo(m_records.path()).absolutePath();
    const QString name = QFileInfo(folder).fileName();
    const QString parent = QFileInfo(folder).absolutePath();
    // torch: <logdir>/<main_tag with / as _>_<name>/, beside <logdir>'s own event file.
    const QString stem = QString(tag).replace(QLatin1Char('/'), QLatin1Char('_')) + QLatin1Char('_');
    if (name.size() > stem.size() && name.startsWith(stem) && holdsEventFile(parent))
        return tag + QLatin1Char('/') + name.mid(stem.size());
    // tensorboardX: <logdir>/<main_tag>/<name>/, <logdir> holding the writer's own event file.
    const QString tail = QLatin1Char('/') + tag;
    if (parent.endsWith(tail) && holdsEventFile(parent.chopped(tail.size())))
        return tag + QLatin1Char('/') + name;
    return tag;
}

TrackerPoll TensorBoardFile::poll()
{
    TrackerPoll poll;
    TfRecordFile::Read read = m_records.readAvailable();
    poll.problem = read.problem;
    for (const QByteArray &record : read.records) {
        const auto event = decodeTensorBoardEvent(record);
        if (!event) {
            poll.problem = QStringLiteral("a record that is not a TensorBoard event was skipped");
            continue;
        }
        for (const TensorBoardEvent::Scalar &scalar : event->scalars)
            poll.samples.push_back(
                {keyOf(scalar.tag), scalar.value, event->step, event->wallTime, scalar.singlePrecision});
    }
    return poll;
}

} // namespace accel::trackers
