// TensorBoardFile: the scalars of one TensorBoard event file (torch.utils.tensorboard,
// tensorboardX, TensorFlow), read live through TfRecordFile and decoded with protobuf
// (tensorboard.proto). A scalar is a summary value holding either
//   - simple_value (a float: torch's add_scalar, tensorboardX), or
//   - a one-element numeric tensor (float, double, half, bfloat16, integers, bool) whose plugin is
//     "scalars" or none (add_scalar(new_style=True), double_precision, TensorFlow 2).
// Text, histograms, images, hparams and other plugins' values are not scalars and are skipped.
// Keys are the tags, except for the files add_scalars(main_tag, {name: value}) writes: each value
// goes to an event file of its own, in a folder "<logdir>/<main_tag with / as _>_<name>" (torch) or
// "<logdir>/<main_tag>/<name>" (tensorboardX), with the tag main_tag, while <logdir> holds the
// writer's own event file; their key is "<main_tag>/<name>" (what TensorBoard shows as that run).
#pragma once

#include "monitor/trackers/tfrecordfile.h"
#include "monitor/trackers/trackersample.h"

#include <map>
#include <optional>

namespace accel::trackers {

struct TensorBoardEvent {
    double wallTime = 0;
    qint64 step = 0;
    struct Scalar {
        QString tag;
        double value = 0;
        bool singlePrecision = false; // a float32 (simple_value, DT_FLOAT, DT_HALF, DT_BFLOAT16)
    };
    std::vector<Scalar> scalars;
};
// Decodes one record of an event file; nullopt when it is not an Event.
std::optional<TensorBoardEvent> decodeTensorBoardEvent(const QByteArray &record);

// Whether a file name is an event file's ("events.out.tfevents.<time>.<host>...").
bool isTensorBoardEventFile(const QString &fileName);

class TensorBoardFile : public TrackerSource {
public:
    explicit TensorBoardFile(const QString &path);
    TrackerPoll poll() override;
    const QString &path() const { return m_records.path(); }

private:
    QString keyOf(const QString &tag);
    bool holdsEventFile(const QString &folder);

    TfRecordFile m_records;
    std::map<QString, bool> m_writerFolders; // folder -> holds an event file (once true, kept)
};

} // namespace accel::trackers
