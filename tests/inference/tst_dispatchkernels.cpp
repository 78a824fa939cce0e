// tst_dispatch's decode-product tests (the class is in tst_dispatch.h): the products' pieces on the
// intra-op threads, each kernel (int8, float32, bfloat16, the GPT-2 column products) against the
// exact product at every instruction set this CPU runs, decode through them against libtorch's
// products, and the int8 kernel chosen by capability and measurement.
#include "tests/helpers/dtypename.h"
#include "tests/inference/kernelisas.h"
#include "tests/inference/tinymodels.h"
#include "tests/inference/tst_dispatch.h"

#include "core/inference/bf16gemv.h"
#include "core/inference/bf16pairs.h"
#include "core/inference/causallm.h"
#include "core/inference/decodebound.h"
#include "core/inference/floatgemv.h"
#include "core/inference/gemvcolumns.h"
#include "core/inference/generator.h"
#include "core/inference/int8gemv.h"
#include "core/inference/int8kernel.h"
#include "core/inference/intraopteam.h"
#include "core/inference/layers.h"
#include "core/inference/promptkernel.h"
#include "core/inference/quantizedweight.h"

#include <ATen/Parallel.h>

#include <QFile>
#include <QtTest>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

using namespace accel;
using namespace accel::inference;
using accel::test::cpuFlags;
using accel::test::dtypeName;

// parallelPieces covers [0, n) once, in pieces of whole multiples of the alignment and at least the
// minimum (up to 4 a thread), and with 2 intra-op threads runs them on both threads (each starts
// with a piece of its own; at::parallel_for inlined into code built without -fopenmp would run
// everything on the calling thread).
void tst_Dispatch::piecesRunOnTheIntraOpThreads()
{
    QVERIFY(inference::intraOpTeamAvailable());
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(64), int64_t(1001)}) {
        std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
        std::mutex mutex;
        std::set<pthread_t> threads;
        std::vector<std::pair<int64_t, int64_t>> pieces;
        inference::parallelPieces(n, 4, 8, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i)
                ++seen[size_t(i)];
            std::lock_guard<std::mutex> lock(mutex);
            threads.insert(pthread_self());
            pieces.emplace_back(begin, end);
        });
        for (const auto &count : seen)
            QCOMPARE(count.load(), 1);
        for (const auto &[begin, end] : pieces)
            QVERIFY2(begin % 4 == 0 && (end % 4 == 0 || end == n) && (end - begin >= 8 || end == n),
                     qPrintable(QString::number(n)));
        // Two pieces of at least 8 items need 16 items; 64 and 1001 make 4 pieces a thread.
        QCOMPARE(int(threads.size()), n >= 16 ? 2 : 1);
        QCOMPARE(int(pieces.size()), n >= 16 ? 8 : 1);
    }
    at::set_num_threads(previous);
}

// Every element of an int8 product against the exact one (float64). A float32 dot product of k
// terms summed in any order (recursive or blocked) is within gamma_k * sum_i |x_i w_i| of the exact
// sum (gamma_k = k u / (1 - k u), u = 2^-24), and scaling the sum rounds once more. Through
// QuantizedWeight the reference is dequantize()'s float32 weights, which round q * SCB / 127 once
// where the kernels use q times the scale SCB / 127 (rounded twice): (k + 4) u * sum_i |x_i| |w_i|
// covers every case. A wrong row, a lost tail or a missing scale is off by whole terms, far outside.
void tst_Dispatch::int8KernelEqualsTheDequantizedProduct()
{
    c10::InferenceMode guard;
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    at::manual_seed(11);
    std::string cpuinfo;
    if (QFile file(QStringLiteral("/proc/cpuinfo")); file.open(QIODevice::ReadOnly))
        cpuinfo = file.readAll().toStdString();
    const KernelIsa host = kernelIsaForFlags(hardware::parseCpuInfo(cpuinfo).flags);
    QCOMPARE(int(hostKernelIsa()), int(host));
    const std::vector<KernelIsa> isas = test::isasThisCpuRuns(); // host, checked just above
    qInfo("this CPU's int8 kernel: %s", kernelIsaName(host));
    const double u = std::ldexp(1.0, -24);
    auto within = [&](const at::Tensor &got, const at::Tensor &x, const at::Tensor &w, const QString &what) {
        const at::Tensor want = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
        const at::Tensor bound =
            at::matmul(x.abs().to(at::kDouble), w.abs().to(at::kDouble).t()) * (double(x.size(1) + 4) * u);
        const double excess = ((got.to(at::kDouble) - want).abs() - bound).max().item<double>();
        return excess <= 0 ? QString() : QStringLiteral("%1: %2 over the bound").arg(what).arg(excess);
    };
    // Shapes with tails of every kind (k not a multiple of 8, 16 or 32, n not a multiple of 4), one
    // large enough (203 x 1029) to be split over both threads, and rows of at least
    // every ISA's kOneStreamRowBytes (21 x 8195), which one row of x reads four side by side, not one
    // at a time. At AVX2 one row of x reads rows shorter than that in 32-byte blocks (int8gemv.cpp):
    // pairs of blocks only (1029), one block only (48, 40), and the longest such row, 4095, with 63
    // pairs, one block and 31 values after them.
    const std::vector<std::pair<int64_t, int64_t>> shapes{{203, 1029}, {64, 48},   {7, 3},
                                                          {9, 40},     {12, 4095}, {21, 8195}};
    for (const auto &[n, k] : shapes) {
        const QString shape = QStringLiteral("[%1 x %2]").arg(n).arg(k);
        const at::Tensor q = at::randint(-127, 128, {n, k}).to(at::kChar);
        const at::Tensor scale = at::rand({n}) * 0.02 + 0.001;
        const at::Tensor w = q.to(at::kFloat) * scale.unsqueeze(1); // exact in float64 below
        const QuantizedWeight weight = QuantizedWeight::quantizeInt8(at::randn({n, k}));
        const at::Tensor dequantized = weight.dequantize();
        for (int64_t rows : {1, 2, 3, 4, 6}) {
            const at::Tensor x = at::randn({rows, k});
            const QString what = shape + QStringLiteral(", %1 rows").arg(rows);
            for (KernelIsa isa : isas) {
                at::Tensor out = at::full({rows, n}, std::nan(""));
                int8::gemv(isa, x.data_ptr<float>(), rows, k, q.data_ptr<int8_t>(), scale.data_ptr<float>(), n,
                           out.data_ptr<float>());
                const QString failed = within(out, x, w, what + " ours-" + kernelIsaName(isa));
                QVERIFY2(failed.isEmpty(), qPrintable(failed));
            }
            QString failed = within(weight.decodeProduct(x, Int8Kernel::Ours), x, dequantized, what + " decode");
            QVERIFY2(failed.isEmpty(), qPrintable(failed));
            failed = within(weight.matmul(x), x, dequantized, what + " matmul");
            QVERIFY2(failed.isEmpty(), qPrintable(failed));
        }
    }
    at::set_num_threads(previous);
}

// The exact product (float64) of x [.., k] and `columns` [k, n] plus an optional bias [n], and the
// bound every float32 sum of its terms stays within: (k + 2) u (|x| |columns| + |bias|), u = 2^-24
// (the decode kernels' exactness tests below).
struct ExactProduct {
    at::Tensor want, bound;
};
static ExactProduct exactProduct(const at::Tensor &x, const at::Tensor &columns, const at::Tensor &bias)
{
    const at::Tensor xd = x.to(at::kDouble), wd = columns.to(at::kDouble);
    ExactProduct exact{at::matmul(xd, wd), at::matmul(xd.abs(), wd.abs())};
    if (bias.defined()) {
        exact.want = exact.want + bias.to(at::kDouble);
        exact.bound = exact.bound + bias.abs().to(at::kDouble);
    }
    exact.bound = exact.bound * (double(wd.size(0) + 2) * std::ldexp(1.0, -24));
    return exact;
}

// Every element of the float32 decode product (floatgemv.h) against the exact one (float64): a dot
// product of k float32 terms summed in any order is within gamma_k * sum_i |x_i w_i| of the exact
// sum, and adding the bias rounds once more: (k + 2) u * (sum_i |x_i| |w_i| + |b|) covers it (u =
// 2^-24). A wrong row, a lost tail of k or a missing bias is off by whole terms. Also through
// linearRows, which a Linear's forward of up to kOurKernelMostRows rows takes.
void tst_Dispatch::floatKernelEqualsTheExactProduct()
{
    c10::InferenceMode guard;
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    at::manual_seed(12);
    const std::vector<KernelIsa> isas = test::isasThisCpuRuns();
    // 600 x 2061: rows of at least every ISA's kOneStreamRowBytes, read four side by side also for one
    // row of x; and pieces of several kChunkBytes chunks (32 rows each), which more rows of x than one
    // pass serves (6, 9) take chunk by chunk.
    const std::vector<std::pair<int64_t, int64_t>> shapes{{203, 1029}, {64, 48},   {7, 3},
                                                          {9, 40},     {1030, 17}, {600, 2061}};
    for (const auto &[n, k] : shapes) {
        const at::Tensor w = at::randn({n, k});
        for (const bool withBias : {false, true}) {
            const at::Tensor bias = withBias ? at::randn({n}) : at::Tensor();
            for (int64_t rows : {1, 2, 3, 4, 6, 9}) {
                const at::Tensor x = at::randn({rows, k});
                const auto [want, bound] = exactProduct(x, w.t(), bias);
                const QString what =
                    QStringLiteral("[%1 x %2], %3 rows, bias %4").arg(n).arg(k).arg(rows).arg(withBias);
                for (KernelIsa isa : isas) {
                    at::Tensor out = at::full({rows, n}, std::nan(""));
                    f32::gemv(isa, x.data_ptr<float>(), rows, k, w.data_ptr<float>(),
                              withBias ? bias.data_ptr<float>() : nullptr, n, out.data_ptr<float>());
                    const double excess = ((out.to(at::kDouble) - want).abs() - bound).max().item<double>();
                    QVERIFY2(excess <= 0, qPrintable(what + " " + kernelIsaName(isa) + ": " + QString::number(excess)));
                }
                // A block's input: [1, rows, k] (a decode step, or a prompt of that many tokens).
                const at::Tensor got = linearRows(x.view({1, rows, k}), w, bias);
                QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{1, rows, n}));
                const double excess = ((got.view({rows, n}).to(at::kDouble) - want).abs() - bound).max().item<double>();
                QVERIFY2(excess <= 0, qPrintable(what + " linearRows: " + QString::number(excess)));
            }
        }
    }
    // A weight whose rows are not as long as x's is libtorch's to refuse (at::linear raises), never
    // read by the kernel past the end of x.
    bool refused = false;
    try {
        linearRows(at::randn({1, 3, 8}), at::randn({5, 9}), at::Tensor());
    } catch (const c10::Error &) {
        refused = true;
    }
    QVERIFY(refused);
    at::set_num_threads(previous);
}

// The products of a weight stored [in, out] (gemvcolumns.h, GPT-2's Conv1D) against the exact one
// (float64), with the bound of floatKernelEqualsTheExactProduct: (k + 2) u * (sum_i |x_i| |w_ij| +
// |b_j|). One row (gemvColumns, a decode step) and a prompt's rows (gemmColumns): 2 to 3 rows a
// partial tile, 9 and 16 several tiles. Shapes with columns past the last whole tile, past the last
// whole vector, one vector, a split over two threads whose last piece is short, and ([768, 2304],
// [3000, 40]) weight rows in several chunks and blocks. gemmColumns' outputs are the same bits on
// one thread and two, and a Conv1D's forward of those rows is gemmColumns' output.
void tst_Dispatch::columnKernelEqualsTheExactProduct()
{
    c10::InferenceMode guard;
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    at::manual_seed(13);
    const std::vector<KernelIsa> isas = test::isasThisCpuRuns();
    const std::vector<std::pair<int64_t, int64_t>> shapes{{768, 2304}, {1024, 1000}, {40, 203},
                                                          {9, 7},      {3, 16},      {3000, 40}};
    for (const auto &[k, n] : shapes) {
        const at::Tensor w = at::randn({k, n});
        for (const bool withBias : {false, true}) {
            const at::Tensor bias = withBias ? at::randn({n}) : at::Tensor();
            const float *b = withBias ? bias.data_ptr<float>() : nullptr;
            for (int64_t rows : {1, 2, 3, 9, 16}) {
                const at::Tensor x = at::randn({rows, k});
                const auto [want, bound] = exactProduct(x, w, bias);
                const QString what =
                    QStringLiteral("[%1 x %2], %3 rows, bias %4").arg(k).arg(n).arg(rows).arg(withBias);
                for (KernelIsa isa : isas) {
                    at::Tensor out = at::full({rows, n}, std::nan(""));
                    if (rows == 1)
                        f32::gemvColumns(isa, x.data_ptr<float>(), k, w.data_ptr<float>(), b, n, out.data_ptr<float>());
                    else
                        f32::gemmColumns(isa, x.data_ptr<float>(), rows, k, w.data_ptr<float>(), b, n,
                                         out.data_ptr<float>());
                    const double excess = ((out.to(at::kDouble) - want).abs() - bound).max().item<double>();
                    QVERIFY2(excess <= 0, qPrintable(what + " " + kernelIsaName(isa) + ": " + QString::number(excess)));
                    if (rows == 1)
                        continue;
                    at::set_num_threads(1);
                    at::Tensor alone = at::full({rows, n}, std::nan(""));
                    f32::gemmColumns(isa, x.data_ptr<float>(), rows, k, w.data_ptr<float>(), b, n,
                                     alone.data_ptr<float>());
                    at::set_num_threads(2);
                    QVERIFY2(at::equal(alone, out), qPrintable(what + " " + kernelIsaName(isa) + ": 1 thread"));
                }
            }
        }
    }
    // A Conv1D's forward of a prompt's rows ([1, 5, 40] into 203) goes through gemmColumns, with our
    // kernels taking every row count they can (a model loaded earlier in this process may have measured
    // fewer on this CPU: promptkernel.h).
    const int64_t mostRows = ourKernelMostRows();
    useOurKernelMostRows(kOurKernelMostRows);
    Conv1D conv(40, 203);
    for (const NamedParameter &p : conv.namedParameters())
        p.parameter->value = at::randn(at::IntArrayRef(p.parameter->shape));
    conv.eval();
    const at::Tensor x = at::randn({1, 5, 40});
    const at::Tensor got = conv.forward(x);
    const auto value = [&](const char *name) {
        for (const NamedParameter &p : conv.namedParameters())
            if (p.name == name)
                return p.parameter->value;
        throw std::logic_error(name);
    };
    at::Tensor kernel = at::empty({5, 203});
    f32::gemmColumns(hostKernelIsa(), x.data_ptr<float>(), 5, 40, value("weight").data_ptr<float>(),
                     value("bias").data_ptr<float>(), 203, kernel.data_ptr<float>());
    useOurKernelMostRows(mostRows);
    QVERIFY(at::equal(got.view({5, 203}), kernel));
    at::set_num_threads(previous);
}

// A tiny GPT-2 decoding one token at a time with its cache (each Conv1D multiplying one row, the
// column product) gives the logits of the plain no-cache reference within 1e-4, and generate()'s
// greedy tokens (one sequence: OneThreadedOps, the products shared over two threads) are their
// argmax.
void tst_Dispatch::gpt2DecodeTakesTheColumnProduct()
{
    const std::string dir = m_dir.filePath("gpt2-columns").toStdString();
    auto tiny = test::writeTinyModel(dir, "gpt2", 31);
    auto model = InferenceModel::load(dir);
    QVERIFY2(model, model ? "" : model.error().toString().c_str());
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    std::vector<int64_t> all{3, 17, 5, 40, 22};
    const size_t promptLength = all.size();
    {
        at::InferenceMode guard;
        KVCache cache;
        auto ids = at::tensor(all, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
        at::Tensor logits = (*model)->lm().forward(ids, &cache, true);
        for (int step = 0; step < 6; ++step) {
            all.push_back(logits[0][-1].argmax().item<int64_t>());
            logits = (*model)->lm().forward(at::tensor({all.back()}, ids.options()).unsqueeze(0), &cache, true);
            const auto everything = at::tensor(all, ids.options()).unsqueeze(0);
            const double diff =
                (logits[0][-1] - test::referenceGpt2(tiny, everything)[0][-1]).abs().max().item<double>();
            QVERIFY2(diff < 1e-4, qPrintable(QStringLiteral("step %1: %2").arg(step).arg(diff)));
        }
    }
    SamplingOptions o;
    o.greedy = true;
    o.maxNewTokens = 6;
    o.stopTokenIds = {-1}; // never stop early
    auto result = generate(**model, {std::vector<int64_t>(all.begin(), all.begin() + promptLength)}, o);
    QVERIFY2(result, result ? "" : result.error().toString().c_str());
    QCOMPARE(result->sequences[0].tokens, std::vector<int64_t>(all.begin() + promptLength, all.end()));
    at::set_num_threads(previous);
}

// Greedy decode of the model in dir at bfloat16, one token a step with the cache, twice from the
// same random prompt (a load error thrown): through our products
// (inference mode) and through libtorch's (grad mode on, which linearRows and Conv1D leave to
// libtorch). The tokens of each, and per step the largest |difference| of the logits and the
// largest |logit| of libtorch's.
struct BothWays {
    std::vector<int64_t> ours, theirs;
    std::vector<std::pair<double, double>> differences;
};

static BothWays decodeBothWays(const std::string &dir, int64_t vocab, uint64_t promptSeed, int steps)
{
    LoadOptions options;
    options.dispatch.computeDType = "bfloat16";
    auto loaded = InferenceModel::load(dir, options);
    if (!loaded)
        throw std::runtime_error(loaded.error().toString());
    InferenceModel &model = **loaded;
    at::manual_seed(promptSeed);
    const at::Tensor prompt = at::randint(vocab, {1, 5}, at::TensorOptions().dtype(at::kLong));
    const auto decode = [&](std::vector<at::Tensor> &logits) {
        KVCache cache;
        std::vector<int64_t> tokens;
        at::Tensor last = model.lm().forward(prompt, &cache).select(1, -1);
        for (int step = 0; step < steps; ++step) {
            const int64_t next = last.argmax(-1).item<int64_t>();
            tokens.push_back(next);
            at::Tensor stepLogits = model.lm().forward(at::full({1, 1}, next, at::kLong), &cache).select(1, 0);
            logits.push_back(stepLogits.detach().clone().to(at::kFloat));
            last = stepLogits;
        }
        return tokens;
    };
    BothWays both;
    std::vector<at::Tensor> ours, theirs;
    {
        at::InferenceMode guard;
        both.ours = decode(ours);
    }
    {
        at::AutoGradMode grad(true);
        both.theirs = decode(theirs);
    }
    for (size_t i = 0; i < ours.size(); ++i)
        both.differences.emplace_back((ours[i] - theirs[i]).abs().max().item<double>(),
                                      theirs[i].abs().max().item<double>());
    return both;
}

// Every kernel ISA this CPU runs, the portable loop first.
static const uint16_t *bf16Bits(const at::Tensor &t)
{
    return reinterpret_cast<const uint16_t *>(t.data_ptr<at::BFloat16>());
}

// The bfloat16 column product (gemvcolumns.h, GPT-2's Conv1D at bfloat16) against the exact
// product (float64) of the same bfloat16 values: the float32 sum within (k + 2) u * (sum_i |x_i|
// |w_ij| + |b_j|), then at most half a bfloat16 ulp more for the one rounding. A missing bias or a
// truncating rounding fails. Conv1D::forward on one bfloat16 row, no grad, equals the kernel bit for
// bit (libtorch's addmm, which sums in another order, differs in some outputs of [1024 x 1000]).
void tst_Dispatch::bf16ColumnKernelEqualsTheExactProduct()
{
    c10::InferenceMode guard;
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    at::manual_seed(17);
    const std::vector<std::pair<int64_t, int64_t>> shapes{{768, 2304}, {1024, 1000}, {40, 203}, {9, 7}, {3, 16}};
    for (const auto &[k, n] : shapes) {
        const at::Tensor w = at::randn({k, n}).to(at::kBFloat16), x = at::randn({k}).to(at::kBFloat16);
        for (const bool withBias : {false, true}) {
            const at::Tensor bias = withBias ? at::randn({n}).to(at::kBFloat16) : at::Tensor();
            const auto [want, bound] = exactProduct(x, w, bias);
            const QString what = QStringLiteral("[%1 x %2] bias %3").arg(k).arg(n).arg(withBias);
            for (KernelIsa isa : test::isasThisCpuRuns()) {
                at::Tensor out = at::full({n}, std::nan("")).to(at::kBFloat16);
                bf16::gemvColumns(isa, bf16Bits(x), k, bf16Bits(w), withBias ? bf16Bits(bias) : nullptr, n,
                                  reinterpret_cast<uint16_t *>(out.data_ptr<at::BFloat16>()));
                const at::Tensor got = out.to(at::kDouble);
                const at::Tensor halfUlp = at::exp2(at::floor(at::log2(at::maximum(want.abs(), got.abs()))) - 8);
                const double excess = ((got - want).abs() - bound - halfUlp).max().item<double>();
                QVERIFY2(excess <= 0, qPrintable(what + " " + kernelIsaName(isa) + ": " + QString::number(excess)));
            }
            if (withBias) { // Conv1D always has a bias
                Conv1D layer(k, n);
                layer.parameters()[0]->value = w;
                layer.parameters()[1]->value = bias;
                // A block's input, [1, rows, k]: one row (a decode step) through the column kernel on
                // every CPU, more (a prompt) where libtorch's bfloat16 GEMM has no instructions of its
                // own: row by row up to kOurBf16ColumnKernelMostRows, beyond through
                // widenedBf16Columns, which must be within the exact product's bound (its blocks of
                // columns, for [768 x 2304] two and a tail, and the bias) and which forward must
                // equal bit for bit; x's first row is the row above.
                const int64_t most = kOurBf16ColumnKernelMostRows;
                QVERIFY(!bf16ColumnsWidened(most));
                QCOMPARE(bf16ColumnsWidened(most + 1), !bf16GemmHere());
                for (const int64_t rows : {int64_t(1), int64_t(3), most, most + 1, kOurKernelMostRows + 1}) {
                    if (rows > 1 && bf16GemmHere())
                        continue;
                    const at::Tensor xs = at::cat({x.view({1, k}), at::randn({rows - 1, k}).to(at::kBFloat16)});
                    const at::Tensor got = layer.forward(xs.view({1, rows, k}));
                    QCOMPARE(dtypeName(got.scalar_type()), dtypeName(at::kBFloat16));
                    QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{1, rows, n}));
                    const QString forward = what + " Conv1D::forward of " + QString::number(rows) + " rows";
                    if (bf16ColumnsWidened(rows)) {
                        const at::Tensor widened = widenedBf16Columns(xs, w, bias);
                        const auto [wanted, bounded] = exactProduct(xs, w, bias);
                        const at::Tensor wide = widened.to(at::kDouble);
                        const at::Tensor halfUlp =
                            at::exp2(at::floor(at::log2(at::maximum(wanted.abs(), wide.abs()))) - 8);
                        const double excess = ((wide - wanted).abs() - bounded - halfUlp).max().item<double>();
                        QVERIFY2(excess <= 0, qPrintable(forward + " widened: " + QString::number(excess)));
                        QVERIFY2(at::equal(got[0], widened), qPrintable(forward));
                        continue;
                    }
                    for (int64_t r = 0; r < rows; ++r) {
                        const at::Tensor row = xs[r].contiguous();
                        at::Tensor kernel = at::empty({n}, at::kBFloat16);
                        bf16::gemvColumns(hostKernelIsa(), bf16Bits(row), k, bf16Bits(w), bf16Bits(bias), n,
                                          reinterpret_cast<uint16_t *>(kernel.data_ptr<at::BFloat16>()));
                        QVERIFY2(at::equal(got[0][r], kernel), qPrintable(forward + ", row " + QString::number(r)));
                    }
                }
            }
        }
    }
    at::set_num_threads(previous);
}

// Greedy decode of a tiny bfloat16 GPT-2, one token a step with the cache: through Conv1D's
// column product (inference mode) and through libtorch's addmm (grad mode on, which Conv1D leaves
// to libtorch). Both round float32 sums once to bfloat16, in different orders, so a value on the
// way may differ by a bfloat16 ulp: the tokens must be the same, and every step's logits within one
// bfloat16 ulp of the step's largest (measured identical; a truncating rounding, 2^-6 of it, fails).
void tst_Dispatch::bf16Gpt2DecodeMatchesLibtorchAddmm()
{
    const std::string dir = m_dir.filePath("bf16gpt2").toStdString();
    auto tiny = test::writeTinyModel(dir, "gpt2", 37, at::kBFloat16);
    const BothWays both = decodeBothWays(dir, tiny.vocab, 5, 12);
    QCOMPARE(both.ours, both.theirs);
    double largest = 0;
    for (size_t i = 0; i < both.differences.size(); ++i) {
        const auto [diff, size] = both.differences[i];
        QVERIFY2(diff <= std::exp2(std::floor(std::log2(size)) - 7),
                 qPrintable(QString("step %1: max |diff| %2 of %3").arg(i).arg(diff).arg(size)));
        largest = std::max(largest, diff / size);
    }
    qInfo("largest logit difference %g of the step's largest logit", largest);
}

// Every element of the bfloat16 decode product (bf16gemv.h) against the exact product (float64) of
// the same bfloat16 values: the float32 sum within (k + 2) u * (sum_i |x_i| |w_i| + |b|), as for
// float32, and then the one rounding to bfloat16, at most half a bfloat16 ulp of the output more.
// A missing bias or a rounding that truncates (off by up to a whole ulp) fails. Also through
// linearRows with bfloat16 x, weight and bias, which must equal the kernel's output bit for bit.
// The dot-pair kernel (bf16pairs.h; exact products, float32 sums, so the same bound) on its own
// where the CPU has avx512_bf16, with bfloat16 x at Avx512 (which bf16::gemv gives it) and through
// linearRows; odd k and k < 32 end in its masked tail. Where the CPU lacks the flag its case is
// skipped (said by a qInfo) and the other kernels are still checked.
void tst_Dispatch::bf16KernelEqualsTheExactProduct()
{
    c10::InferenceMode guard;
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    at::manual_seed(13);
    const std::vector<KernelIsa> isas = test::isasThisCpuRuns();
    const bool pairs = bf16::pairsRunHere();
    QVERIFY(bf16::pairsRunWith(cpuFlags("avx512f avx512bw avx512_bf16")));
    QVERIFY(!bf16::pairsRunWith(cpuFlags("avx512f avx512bw avx512_vnni")));
    if (!pairs)
        qInfo("the dot-pair kernel is not checked: this CPU's /proc/cpuinfo flags lack avx512_bf16");
    const auto bits = [](const at::Tensor &t) {
        return reinterpret_cast<const uint16_t *>(t.data_ptr<at::BFloat16>());
    };
    // 37 x 4103: rows of at least every ISA's kOneStreamRowBytes, read four side by side also for one
    // row of x.
    const std::vector<std::pair<int64_t, int64_t>> shapes{{203, 1029}, {64, 48},   {7, 3},
                                                          {9, 40},     {1030, 17}, {37, 4103}};
    for (const auto &[n, k] : shapes) {
        const at::Tensor w = at::randn({n, k}).to(at::kBFloat16);
        for (const bool withBias : {false, true}) {
            const at::Tensor bias = withBias ? at::randn({n}).to(at::kBFloat16) : at::Tensor();
            // kOurKernelMostRows + 1: a prompt longer than any float32 one our kernel takes.
            for (int64_t rows : {int64_t(1), int64_t(2), int64_t(3), int64_t(4), int64_t(5), kOurKernelMostRows + 1}) {
                const at::Tensor x = at::randn({rows, k}).to(at::kBFloat16);
                const auto [want, bound] = exactProduct(x, w.t(), bias);
                const QString what =
                    QStringLiteral("[%1 x %2], %3 rows, bias %4").arg(n).arg(k).arg(rows).arg(withBias);
                const auto excessOf = [&](const at::Tensor &out) {
                    const at::Tensor got = out.to(at::kDouble);
                    const at::Tensor halfUlp = at::exp2(at::floor(at::log2(at::maximum(want.abs(), got.abs()))) - 8);
                    return ((got - want).abs() - bound - halfUlp).max().item<double>();
                };
                const at::Tensor xf = x.to(at::kFloat);
                for (KernelIsa isa : isas) {
                    for (const bool wideX : {false, true}) {
                        at::Tensor out = at::full({rows, n}, std::nan("")).to(at::kBFloat16);
                        auto *o = reinterpret_cast<uint16_t *>(out.data_ptr<at::BFloat16>());
                        if (wideX)
                            bf16::gemv(isa, xf.data_ptr<float>(), rows, k, bits(w), withBias ? bits(bias) : nullptr, n,
                                       o);
                        else
                            bf16::gemv(isa, bits(x), rows, k, bits(w), withBias ? bits(bias) : nullptr, n, o);
                        const double excess = excessOf(out);
                        QVERIFY2(excess <= 0, qPrintable(what + " " + kernelIsaName(isa) + " float x " +
                                                         QString::number(wideX) + ": " + QString::number(excess)));
                    }
                }
                at::Tensor paired = at::full({rows, n}, std::nan("")).to(at::kBFloat16);
                if (pairs) {
                    bf16::gemvPairs(bits(x), rows, k, bits(w), withBias ? bits(bias) : nullptr, n,
                                    reinterpret_cast<uint16_t *>(paired.data_ptr<at::BFloat16>()));
                    const double excess = excessOf(paired);
                    QVERIFY2(excess <= 0, qPrintable(what + " dot pairs: " + QString::number(excess)));
                }
                // A block's input, [1, rows, k]: one row (a decode step) through our kernel on every
                // CPU, more (a prompt, of any length) where libtorch's bfloat16 GEMM has no
                // instructions of its own.
                if (rows == 1 || !bf16GemmHere()) {
                    const at::Tensor got = linearRows(x.view({1, rows, k}), w, bias);
                    QCOMPARE(dtypeName(got.scalar_type()), dtypeName(at::kBFloat16));
                    QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{1, rows, n}));
                    at::Tensor kernel = at::empty({rows, n}, at::kBFloat16);
                    bf16::gemv(hostKernelIsa(), bits(x), rows, k, bits(w), withBias ? bits(bias) : nullptr, n,
                               reinterpret_cast<uint16_t *>(kernel.data_ptr<at::BFloat16>()));
                    QVERIFY2(at::equal(got.view({rows, n}), kernel), qPrintable(what + " linearRows"));
                    if (pairs) // the decode path on this CPU is the dot-pair kernel
                        QVERIFY2(at::equal(got.view({rows, n}), paired), qPrintable(what + " linearRows dot pairs"));
                }
            }
        }
    }
    at::set_num_threads(previous);
}

// Greedy decode of a tiny bfloat16 Llama, one token a step with the cache: through linearRows' GEMV
// (inference mode) and through at::linear (grad mode on, which linearRows leaves to libtorch).
// Both round float32 sums once to bfloat16 but sum in different orders, so a logit may differ by
// one bfloat16 ulp: the tokens must be the same, and every step's logits within 2^-6 of their size.
void tst_Dispatch::bf16DecodeMatchesLibtorchLinear()
{
    const std::string dir = m_dir.filePath("bf16decode").toStdString();
    auto tiny = test::writeTinyModel(dir, "llama", 21, at::kBFloat16, false);
    const BothWays both = decodeBothWays(dir, tiny.vocab, 4, 12);
    QCOMPARE(both.ours, both.theirs);
    double largest = 0;
    for (size_t i = 0; i < both.differences.size(); ++i) {
        const auto [diff, size] = both.differences[i];
        QVERIFY2(diff <= std::ldexp(size, -6),
                 qPrintable(QString("step %1: max |diff| %2 of %3").arg(i).arg(diff).arg(size)));
        largest = std::max(largest, diff / size);
    }
    qInfo("largest logit difference %g of the step's largest logit", largest);
}

// sharedPieces returns once every piece is done, not when every helper has started: with libtorch's
// inter-op threads (where its helpers run) all held by other tasks, the caller does every piece
// and returns; a helper that starts afterwards runs nothing. Inside OneThreadedOps, parallelPieces
// (the int8 and 4-bit products) shares its pieces the same way.
void tst_Dispatch::sharedPiecesDoNotWaitForAHeldHelper()
{
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    std::atomic<bool> release{false};
    std::atomic<int> held{0}, finished{0};
    const int pool = at::get_num_interop_threads();
    for (int i = 0; i < pool; ++i)
        at::launch([&] {
            ++held;
            while (!release.load())
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            ++finished;
        });
    QTRY_COMPARE_WITH_TIMEOUT(held.load(), pool, 10000);
    const pthread_t caller = pthread_self();
    std::vector<std::atomic<int>> seen(1000);
    std::atomic<int> elsewhere{0};
    inference::sharedPieces(1000, 4, 8, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            ++seen[size_t(i)];
        if (!pthread_equal(pthread_self(), caller))
            ++elsewhere;
    });
    for (const auto &count : seen)
        QCOMPARE(count.load(), 1);
    QCOMPARE(elsewhere.load(), 0);
    release = true;
    QTRY_COMPARE_WITH_TIMEOUT(finished.load(), pool, 10000);
    { // one-sequence decode: libtorch's team at 1 thread, the int8 and 4-bit products still in pieces for 2
        OneThreadedOps decode;
        QCOMPARE(at::get_num_threads(), 1);
        std::atomic<int> pieces{0};
        inference::parallelPieces(1000, 4, 8, [&](int64_t, int64_t) { ++pieces; });
        QCOMPARE(pieces.load(), 8);
    }
    QCOMPARE(at::get_num_threads(), 2);
    at::set_num_threads(previous);
}

// A scope for more threads than ever before starts new helpers, and the product posted right after
// is shared with them too: every piece waits (up to 10 s in all) until each of the 6 threads is in
// one, which only happens when the helpers started a moment ago take pieces of it. (A helper that
// took "the product already there when it started" as seen would leave the first one to the others;
// the pinned-threads test then waited 80 s for its helper.)
void tst_Dispatch::newHelpersTakeTheFirstProduct()
{
    constexpr int kTeam = 6; // more than any other test here sets
    const int previous = at::get_num_threads();
    at::set_num_threads(kTeam);
    std::mutex mutex;
    std::set<pthread_t> threads;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    {
        OneThreadedOps decode;
        inference::sharedPieces(1000, 4, 8, [&](int64_t, int64_t) {
            {
                std::lock_guard<std::mutex> lock(mutex);
                threads.insert(pthread_self());
            }
            for (;;) {
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    if (int(threads.size()) >= kTeam)
                        return;
                }
                if (std::chrono::steady_clock::now() > deadline)
                    return;
                std::this_thread::yield();
            }
        });
    }
    at::set_num_threads(previous);
    QCOMPARE(int(threads.size()), kTeam);
}

// The CPU time (ns, /proc/self/task/*/schedstat) of this process's threads named `name`, and how
// many there are.
static std::pair<int64_t, int> threadsCpuNs(const std::string &name)
{
    std::pair<int64_t, int> total{0, 0};
    for (const auto &task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm"), stat(task.path() / "schedstat");
        std::string named;
        int64_t ns = 0;
        if (std::getline(comm, named) && named == name && (stat >> ns)) {
            total.first += ns;
            ++total.second;
        }
    }
    return total;
}

// Inside OneThreadedOps the products' helpers are threads of their own ("accel-helper") that spin
// for a moment after a product for the next one, then sleep: their CPU time stops growing a moment
// after the last product, inside the scope and after it (a helper that kept spinning would add up
// to the 300 ms watched).
void tst_Dispatch::sharedPiecesHelpersSleepOutsideTheirSpin()
{
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    std::atomic<int> pieces{0};
    auto watched = [](int64_t &grown) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20)); // past any spin
        const auto before = threadsCpuNs("accel-helper");
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const auto after = threadsCpuNs("accel-helper");
        QVERIFY(before.second >= 1);
        QCOMPARE(after.second, before.second);
        grown = after.first - before.first;
    };
    int64_t inside = -1, after = -1;
    {
        OneThreadedOps decode;
        for (int i = 0; i < 100; ++i)
            inference::sharedPieces(1000, 4, 8, [&](int64_t, int64_t) { ++pieces; });
        watched(inside);
        for (int i = 0; i < 100; ++i)
            inference::sharedPieces(1000, 4, 8, [&](int64_t, int64_t) { ++pieces; });
    }
    watched(after);
    QCOMPARE(pieces.load(), 200 * 8);
    qInfo("helpers' CPU time over 300 ms without products: %.2f ms in the scope, %.2f ms after it", inside / 1e6,
          after / 1e6);
    QVERIFY(inside >= 0 && inside < 30000000);
    QVERIFY(after >= 0 && after < 30000000);
    at::set_num_threads(previous);
}

// The choice between our kernel and libtorch's _weight_int8pack_mm: the CPU's flags name our ISA,
// the measurement decides (ours on a tie), libtorch refusing a dtype leaves ours, and the reason
// says so. On this machine, a real measurement on a real weight.
void tst_Dispatch::int8KernelChosenByFlagsAndMeasurement()
{
    auto times = [](double ours, double libtorch) {
        return [ours, libtorch] {
            Int8KernelTimes t;
            t.oursMs = ours;
            t.libtorchMs = libtorch;
            t.bytes = 85000000;
            t.layers = 48;
            if (libtorch < 0)
                t.libtorchError = "expected A to be bfloat16";
            return t;
        };
    };
    auto choice = chooseInt8Kernel(cpuFlags("avx512f"), "float32", times(2, 3));
    QVERIFY(choice.kernel == Int8Kernel::Ours);
    QCOMPARE(choice.name, std::string("ours-avx512"));
    QVERIFY2(choice.reason.find("CPU flags avx512f avx2 fma: ours-avx512; 1-row float32 products through 48 int8 "
                                "layer(s) (85.00 MB) 2.00 ms ours, 3.00 ms libtorch's _weight_int8pack_mm") !=
                 std::string::npos,
             choice.reason.c_str());
    choice = chooseInt8Kernel(cpuFlags(""), "bfloat16", times(3, 2));
    QVERIFY(choice.kernel == Int8Kernel::Libtorch);
    QCOMPARE(choice.name, std::string("libtorch-_weight_int8pack_mm"));
    QCOMPARE(choice.dtype, std::string("bfloat16"));
    QCOMPARE(chooseInt8Kernel(cpuFlags(""), "float32", times(2, 2)).name, std::string("ours-avx2")); // a tie
    // libtorch's kernel 1.1x faster: within the margin of a measurement, ours stays.
    QCOMPARE(chooseInt8Kernel(cpuFlags(""), "float32", times(2.2, 2)).name, std::string("ours-avx2"));
    QCOMPARE(chooseInt8Kernel(cpuFlags(""), "float32", times(2.4, 2)).name,
             std::string("libtorch-_weight_int8pack_mm"));
    const std::string noFma = "processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu sse2 avx avx2\n\n";
    choice = chooseInt8Kernel(hardware::parseCpuInfo(noFma).flags, "float32", times(9, -1)); // the portable loop
    QVERIFY(choice.kernel == Int8Kernel::Ours);
    QCOMPARE(choice.name, std::string("ours-portable"));
    QVERIFY2(choice.reason.find("refused them (expected A to be bfloat16)") != std::string::npos,
             choice.reason.c_str());
    // This machine.
    c10::InferenceMode guard;
    std::string cpuinfo;
    if (QFile file(QStringLiteral("/proc/cpuinfo")); file.open(QIODevice::ReadOnly))
        cpuinfo = file.readAll().toStdString();
    const QuantizedWeight weight = QuantizedWeight::quantizeInt8(at::randn({512, 256}));
    for (const char *dtype : {"float32", "bfloat16"}) {
        choice = chooseInt8Kernel(hardware::parseCpuInfo(cpuinfo).flags, dtype, [&] {
            return measureInt8Kernels({&weight, &weight}, dtype);
        });
        qInfo("this CPU, %s: %s (%s)", dtype, choice.name.c_str(), choice.reason.c_str());
        QCOMPARE(choice.times.layers, size_t(2));
        QCOMPARE(choice.times.bytes, 2 * weight.bytes());
        QVERIFY(choice.times.oursMs > 0);
        QCOMPARE(choice.kernel == Int8Kernel::Libtorch,
                 choice.times.libtorchMs >= 0 &&
                     choice.times.libtorchMs * inference::kMeasuredChoiceMargin <= choice.times.oursMs);
    }
}
