// StdoutMetricsParser (opt-in): metrics from the printed output of scripts that write no metrics
// file. Recognises
//   - Hugging Face Trainer dicts: {'loss': 2.3, 'learning_rate': 5e-05, 'epoch': 0.1}
//     (learning_rate is stored as lr; numbers only, other values ignored)
//   - key=value pairs on a line naming a known metric: "step=120 loss=2.31 lr=3e-4"
//   - tqdm progress: "120/1000 [00:10<01:20, 12.3it/s]" (step 120, it_per_s) and "1.5s/it"
//     (step_time_s). Carriage-return separated progress updates count one by one.
// Lines without a step get the newest step seen on the stream (tqdm or step=), else a count.
#pragma once

#include "monitor/metricbatch.h"

#include <QHash>
#include <QString>

namespace accel::monitor {

class StdoutMetricsParser {
public:
    void setRank(int rank) { m_rank = rank; }

    // Appends at most one row per progress segment of `line`; returns how many rows were added.
    // `time` is the Unix time to stamp them with (printed output carries none).
    int parseLine(const QString &line, double time, MetricBatch &out);

    const std::vector<QByteArray> &names() const { return m_names; }

private:
    int parseSegment(QStringView segment, double time, MetricBatch &out);
    int nameId(const QString &name);

    std::vector<QByteArray> m_names;
    QHash<QString, int> m_nameIds;
    std::int64_t m_lastStep = kNoStep;
    std::int64_t m_lineCount = 0;
    int m_rank = -1;
};

} // namespace accel::monitor
