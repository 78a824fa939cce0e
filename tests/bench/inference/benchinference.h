// The inference benchmark's test class and what its two sources share (bench_inference.cpp: GPT-2
// small against Python eager, quantized rows, pinned threads, the int8 and bfloat16 kernels;
// bench_peers.cpp: every dtype against transformers, llama.cpp and the bandwidth bound).
#pragma once

#include "core/inference/generator.h"

#include <QMap>
#include <QObject>
#include <QProcess>
#include <QString>

#include <string>

class tst_BenchInference : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void gpt2Small();
    void gpt2SmallQuantized();
    void peers_data();
    void peers();
    void pinnedThreads();
    void int8Kernels_data();
    void int8Kernels();
    void bf16Products();
};

namespace accel::benchinference {

inline constexpr int kThreads = 2;
inline constexpr int kPrefill = 256;
inline constexpr int kDecode = 64;
inline constexpr int kRounds = 3;

// Greedy, kDecode tokens after the first, never stopping early.
inference::SamplingOptions greedyDecode();

// A peer's `name value` lines.
QMap<QString, double> readFigures(QProcess &python);

// Whether a peer or worker process `finished` (waitForFinished) with exit code 0; else how it ended:
// "exit 2", "killed by signal 4" (a crash: llama.cpp's SIGILL on an AMX CPU), "did not finish".
bool endedWell(const QProcess &process, bool finished);
QString howItEnded(const QProcess &process, bool finished);

// The 1-minute load average (/proc/loadavg), for telling a noisy round from a real change.
double loadAverage();

// peers_data's shapes: the GPT-2-small-shaped or the Llama-1.1B-shaped random checkpoint (float32)
// in `folder`.
void writeShape(const QString &shape, const std::string &folder);

} // namespace accel::benchinference
