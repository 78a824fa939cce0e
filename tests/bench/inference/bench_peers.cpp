// bench_inference's peers(): every dtype of ours against transformers, llama.cpp and the bandwidth
// bound, in rounds (benchinference.h).
#include "core/common/fileutil.h"
#include "core/hardware/procparsers.h"
#include "core/inference/decodebound.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/intraopteam.h"
#include "tests/bench/inference/benchinference.h"
#include "tests/helpers/benchreport.h"
#include "tests/helpers/testsupport.h"

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

using namespace accel;
using namespace accel::benchinference;
using accel::test::bench;
using accel::test::median;

// Every peer on the same float32 checkpoint, 2 threads, greedy decode after a 16-token prompt: ours
// at float32, bfloat16 and int8 once in this process (each against the bandwidth read right after
// its decode, and the one read at the start beside it), then kRounds rounds of `accel-worker
// generate` in a process of its own, as a user runs it and as each peer runs, with the dtype's
// peers in the same round: transformers' generate at the same dtype (int8 through bitsandbytes, once)
// and llama.cpp at F32 and Q8_0 (bench_llamacpp.py, through llama-cpp-python:
// ACCEL_BENCH_LLAMACPP_PYTHON names an interpreter that has it, else ACCEL_PYTHON; the GGUF written
// once). Ratios to a peer are the medians of the rounds' ratios. Also which dtype the
// capability-and-measurement rule (decodebound.h) picks on this CPU, and float32 with the intra-op
// threads pinned.
void tst_BenchInference::peers()
{
    QFETCH(QString, shape);
    QFETCH(int, decodeTokens);
    const QString interpreter = qEnvironmentVariable("ACCEL_PYTHON");
    if (interpreter.isEmpty())
        QSKIP("ACCEL_PYTHON is not set: run through ctest (the project's Python environment is the peer)");
    QString llamaPython = qEnvironmentVariable("ACCEL_BENCH_LLAMACPP_PYTHON");
    if (llamaPython.isEmpty())
        llamaPython = interpreter;
    QTemporaryDir dir;
    const std::string folder = dir.path().toStdString();
    writeShape(shape, folder);
    if (QTest::currentTestFailed())
        return;
    at::set_num_threads(kThreads);
    const double bandwidth = inference::memoryBandwidth();
    std::vector<int64_t> prompt(16);
    for (int i = 0; i < 16; ++i)
        prompt[i] = 100 + i;
    inference::SamplingOptions sampling = greedyDecode();
    sampling.maxNewTokens = decodeTokens + 1;
    const QByteArray tag = shape.toLatin1().replace('-', '_');
    auto peer = [&](const QString &python, const QString &script, const QString &kind, const QString &kept) {
        QStringList args{test::sourceDir() + "/tests/bench/inference/" + script, QString::fromStdString(folder),
                         QString::number(kThreads), QString::number(decodeTokens), kind};
        if (!kept.isEmpty())
            args << kept;
        QProcess process;
        process.start(python, args);
        const bool finished = process.waitForFinished(1800000);
        auto figures = readFigures(process);
        if (!endedWell(process, finished))
            std::printf("PEER %s %s failed (%s): %s\n", qPrintable(script), qPrintable(kind),
                        qPrintable(howItEnded(process, finished)),
                        process.readAllStandardError().right(600).constData());
        return figures;
    };
    auto report = [&](const QByteArray &name, double decode, double firstMs, const QString &extra) {
        bench(("peers_" + tag + "_decode_" + name).constData(), decode, "tokens/s", extra);
        bench(("peers_" + tag + "_first_token_" + name).constData(), firstMs, "ms");
    };

    // One run of ours or a peer: decode tokens/s (0 when it failed), time to first token, and the
    // worker's bound in tokens/s (the bandwidth it measured itself) or llama.cpp's GGUF tensor bytes.
    struct Run {
        double decode = 0, firstMs = 0, bound = 0, weightBytes = 0;
    };
    auto worker = [&](const char *dtype) {
        QStringList args{"generate",
                         QString::fromStdString(folder),
                         "--threads",
                         QString::number(kThreads),
                         "--greedy",
                         "--max-new-tokens",
                         QString::number(decodeTokens + 1),
                         "--json",
                         "--input-ids"};
        QStringList ids;
        for (int64_t id : prompt)
            ids << QString::number(id);
        args << ids.join(',');
        if (std::strcmp(dtype, "bfloat16") == 0)
            args << "--dtype"
                 << "bfloat16";
        if (std::strcmp(dtype, "int8") == 0)
            args << "--quantization"
                 << "int8";
        QProcess process;
        process.start(test::binDir() + "/accel-worker", args);
        const bool finished = process.waitForFinished(1800000);
        const auto out = nlohmann::json::parse(process.readAllStandardOutput().toStdString(), nullptr, false);
        Run run;
        if (!endedWell(process, finished) || !out.is_object() || !out.contains("stats"))
            std::printf("WORKER %s failed (%s): %s\n", dtype, qPrintable(howItEnded(process, finished)),
                        process.readAllStandardError().right(600).constData());
        else {
            run.decode = out["stats"].value("decode_tokens_per_second", 0.0);
            run.firstMs = out["stats"].value("time_to_first_token_ms", 0.0);
            run.bound = out["decode_bound"].value("tokens_per_s", 0.0);
        }
        return run;
    };
    auto peerRun = [&](const QString &python, const QString &script, const QString &kind, const QString &kept) {
        const auto figures = peer(python, script, kind, kept);
        return Run{figures.value("decode"), figures.value("first_token_ms"), 0, figures.value("weight_bytes")};
    };
    // The rounds' values of one figure, for the report: "a/b/c".
    auto each = [](const std::vector<double> &values) {
        QStringList parts;
        for (double v : values)
            parts << QString::number(v, 'f', 2);
        return parts.join('/');
    };

    // Dtype by dtype: ours in this process once, with the bound read right after its decode; then
    // kRounds rounds of the worker and the dtype's peers, the order rotating each round. Each round's
    // ratio compares runs taken within a minute of each other, and the median of the rounds' ratios
    // is reported: this machine's memory bandwidth moves by a fifth between minutes, which one run
    // of each, minutes apart, cannot tell from the programs (docs/quantization.md, "The decode
    // bound"). transformers' int8 (bitsandbytes, 20-60x slower than ours) runs once.
    struct Row {
        const char *dtype;
        const char *ggml;
        bool transformersRounds;
    };
    for (const Row &row : {Row{"float32", "f32", true}, Row{"bfloat16", "", true}, Row{"int8", "q8_0", false}}) {
        const char *dtype = row.dtype;
        inference::LoadOptions options;
        options.threads = kThreads;
        if (std::strcmp(dtype, "bfloat16") == 0)
            options.dispatch.computeDType = "bfloat16";
        if (std::strcmp(dtype, "int8") == 0)
            options.quantization.method = "int8";
        double decode = 0;
        { // ours, released before the peers load their copies
            auto model = inference::InferenceModel::load(folder, options);
            QVERIFY2(model, model ? "" : model.error().toString().c_str());
            const uint64_t weightBytes = inference::decodeBytes(**model).perToken;
            auto generated = inference::generate(**model, {prompt}, sampling);
            QVERIFY(generated);
            decode = generated->stats.decodeTokensPerSecond;
            // The bound of the bandwidth read right after this decode, and of the one read at the start.
            const double after = inference::measureMemoryBandwidthNow().bytesPerSecond;
            const double bound = after / double(weightBytes);
            report(QByteArray("ours_") + dtype, decode, generated->stats.timeToFirstTokenMs,
                   QString("bound=%1 of_bound=%2 (%3_GB/s,%4_MB/token) of_start_bound=%5 (%6_GB/s)")
                       .arg(bound, 0, 'f', 2)
                       .arg(decode / bound, 0, 'f', 2)
                       .arg(after / 1e9, 0, 'f', 1)
                       .arg(weightBytes / 1e6, 0, 'f', 0)
                       .arg(decode / (bandwidth / double(weightBytes)), 0, 'f', 2)
                       .arg(bandwidth / 1e9, 0, 'f', 1));
        }
        const QString kept = dir.path() + "/peer-" + row.ggml + ".gguf"; // converted once, read every round
        std::vector<std::function<Run()>> runners{[&] { return worker(dtype); }};
        if (row.transformersRounds)
            runners.push_back([&] { return peerRun(interpreter, "bench_transformers.py", dtype, {}); });
        if (*row.ggml)
            runners.push_back([&] { return peerRun(llamaPython, "bench_llamacpp.py", row.ggml, kept); });
        std::vector<std::vector<Run>> runs(runners.size());
        for (int round = 0; round < kRounds; ++round) {
            for (size_t turn = 0; turn < runners.size(); ++turn) {
                const size_t which = (turn + size_t(round)) % runners.size();
                runs[which].push_back(runners[which]());
            }
            QString line = QString("ROUND %1 %2 %3 worker=%4 (of its bound %5)")
                               .arg(round + 1)
                               .arg(QString(tag), dtype)
                               .arg(runs[0].back().decode, 0, 'f', 2)
                               .arg(runs[0].back().decode / std::max(1e-9, runs[0].back().bound), 0, 'f', 2);
            for (size_t p = 1; p < runners.size(); ++p)
                line += QString(" peer%1=%2").arg(p).arg(runs[p].back().decode, 0, 'f', 2);
            std::printf("%s load %.2f\n", qPrintable(line), loadAverage());
            std::fflush(stdout);
        }
        // Decode, time to first token, of-bound and over-peer figures of the rounds where both ran.
        auto decodes = [](const std::vector<Run> &v) {
            std::vector<double> out;
            for (const Run &r : v)
                out.push_back(r.decode);
            return out;
        };
        auto firsts = [](const std::vector<Run> &v) {
            std::vector<double> out;
            for (const Run &r : v)
                out.push_back(r.firstMs);
            return out;
        };
        auto ratios = [&](size_t p) {
            std::vector<double> out;
            for (int r = 0; r < kRounds; ++r)
                if (runs[0][r].decode > 0 && runs[p][r].decode > 0)
                    out.push_back(runs[0][r].decode / runs[p][r].decode);
            return out;
        };
        std::vector<double> ofBound;
        for (const Run &r : runs[0])
            if (r.decode > 0 && r.bound > 0)
                ofBound.push_back(r.decode / r.bound);
        const double workerDecode = median(decodes(runs[0]));
        if (!ofBound.empty())
            report(QByteArray("worker_") + dtype, workerDecode, median(firsts(runs[0])),
                   QString("of_bound=%1 (rounds %2, each against the bound it read itself) worker/in_process=%3 "
                           "(median of %4 rounds: %5)")
                       .arg(median(ofBound), 0, 'f', 2)
                       .arg(each(ofBound))
                       .arg(workerDecode / decode, 0, 'f', 2)
                       .arg(kRounds)
                       .arg(each(decodes(runs[0]))));
        for (size_t p = 1; p < runners.size(); ++p) {
            const bool llama = *row.ggml && p + 1 == runners.size();
            const auto r = ratios(p);
            if (r.empty())
                continue;
            const double peerDecode = median(decodes(runs[p]));
            QString extra = QString("ours/%1=%2 (the rounds' worker/peer: %3) in_process/%1=%4")
                                .arg(llama ? "llamacpp" : "transformers")
                                .arg(median(r), 0, 'f', 2)
                                .arg(each(r))
                                .arg(decode / peerDecode, 0, 'f', 2);
            if (llama)
                extra += QString(" (%1_MB_of_tensors)").arg(runs[p].back().weightBytes / 1e6, 0, 'f', 0);
            report((llama ? QByteArray("llamacpp_") + row.ggml : QByteArray("transformers_") + dtype), peerDecode,
                   median(firsts(runs[p])), extra);
        }
        if (!row.transformersRounds) {
            const auto hf = peer(interpreter, "bench_transformers.py", dtype, {});
            if (hf.value("decode") > 0)
                report(QByteArray("transformers_") + dtype, hf.value("decode"), hf.value("first_token_ms"),
                       QString("ours/transformers=%1 (worker, one run) in_process/transformers=%2")
                           .arg(workerDecode / hf.value("decode"), 0, 'f', 2)
                           .arg(decode / hf.value("decode"), 0, 'f', 2));
        }
    }
    // The dtype rule on this CPU, and float32 again with the intra-op threads pinned.
    std::vector<std::string> flags;
    if (auto cpuinfo = fileutil::readFile("/proc/cpuinfo"))
        flags = hardware::parseCpuInfo(*cpuinfo).flags;
    const auto choice =
        inference::chooseDecodeDType(flags, "float32", [] { return inference::measureDecodeProducts(); });
    std::printf("DTYPE %s chose %s: %s\n", tag.constData(), choice.dtype.c_str(), choice.reason.c_str());
    auto pinned = inference::pinIntraOpThreads();
    QVERIFY2(pinned, pinned ? "" : pinned.error().toString().c_str());
    QString cpus;
    for (int cpu : *pinned)
        cpus += (cpus.isEmpty() ? "" : ",") + QString::number(cpu);
    inference::LoadOptions options;
    options.threads = kThreads;
    auto model = inference::InferenceModel::load(folder, options);
    QVERIFY2(model, model ? "" : model.error().toString().c_str());
    auto generated = inference::generate(**model, {prompt}, sampling);
    QVERIFY(generated);
    report("ours_float32_pinned", generated->stats.decodeTokensPerSecond, generated->stats.timeToFirstTokenMs,
           "cpus=" + cpus);
    QVERIFY(inference::unpinIntraOpThreads());
}
