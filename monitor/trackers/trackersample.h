// One scalar a tracker recorded, as the importers hand it on: its name as the script logged it,
// its value, the step it was logged at and the wall time (Unix seconds) the tracker stored.
#pragma once

#include <QString>

#include <vector>

namespace accel::trackers {

struct TrackerSample {
    QString key;
    double value = 0; // NaN / infinities as stored (written as null, docs/metrics.md)
    qint64 step = 0;
    double time = 0;
    bool singlePrecision = false; // stored as a float32: written as the shortest float that reads back to it
};
using TrackerSamples = std::vector<TrackerSample>;

// What one poll of a tracker's file found: new samples, and a problem to report (a damaged
// record skipped, a file that cannot be read) or empty.
struct TrackerPoll {
    TrackerSamples samples;
    QString problem;
};

// One tracker's files, read incrementally: each poll() hands out what was added since the last.
class TrackerSource {
public:
    virtual ~TrackerSource() = default;
    virtual TrackerPoll poll() = 0;
};

} // namespace accel::trackers
