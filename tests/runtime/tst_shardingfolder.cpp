// The sharded checkpoint folder without libtorch: pieces joined whole, every inconsistency an
// error naming the file and tensor, and `accel merge-weights` writing one model.safetensors, from
// accel's folders and from the torch.distributed.checkpoint folders Accelerate writes (against
// `accelerate merge-weights` itself).
#include "core/bigmodel/safetensors.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/plan/shardedfolder.h"
#include "tests/compat/oracle.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <cstring>
#include <numeric>
#include <sys/resource.h>

using namespace accel;
using namespace accel::runtime;

namespace {

void writeFile(const QString &path, const QByteArray &content)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(content);
}

// A 2x3 weight split 4 + 2 over two ranks and a bias of 2 wholly on rank 1, as the engine writes them.
void writeFolder(const QString &folder, const QByteArray &index)
{
    QDir().mkpath(folder);
    std::vector<float> weight(6);
    std::iota(weight.begin(), weight.end(), 1.0f);
    const float bias[2] = {-1.0f, -2.0f};
    QVERIFY(bigmodel::writeSafetensors((folder + "/rank0.safetensors").toStdString(),
                                       {{"fc.weight", bigmodel::DType::F32, {4}, weight.data(), 16}}));
    QVERIFY(bigmodel::writeSafetensors((folder + "/rank1.safetensors").toStdString(),
                                       {{"fc.weight", bigmodel::DType::F32, {2}, weight.data() + 4, 8},
                                        {"fc.bias", bigmodel::DType::F32, {2}, bias, 8}}));
    writeFile(folder + "/index.json", index);
}

const QByteArray kIndex = R"({"format": "accel-sharded-v1", "kind": "model", "ranks": 2, "step": 0, "tensors": {
  "fc.weight": {"shape": [2, 3], "pieces": [{"file": "rank0.safetensors", "offset": 0, "numel": 4},
                                          {"file": "rank1.safetensors", "offset": 4, "numel": 2}]},
  "fc.bias": {"shape": [2], "pieces": [{"file": "rank1.safetensors", "offset": 0, "numel": 2}]}}})";

// Peak resident memory of this process so far.
long peakRssKiB()
{
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

QString errorOf(const QString &folder)
{
    auto joined = joinShardedFolder(folder.toStdString());
    return joined ? QString() : QString::fromStdString(joined.error().toString());
}

// The tensors of two safetensors files are the same: names, dtypes, shapes and every byte.
void compareSafetensors(const QString &ours, const QString &theirs)
{
    auto a = bigmodel::SafetensorsFile::open(ours.toStdString());
    auto b = bigmodel::SafetensorsFile::open(theirs.toStdString());
    QVERIFY2(a && b, qPrintable(ours));
    QCOMPARE((*a)->tensors().size(), (*b)->tensors().size());
    for (const bigmodel::TensorInfo &expected : (*b)->tensors()) {
        const bigmodel::TensorInfo *got = (*a)->find(expected.name);
        QVERIFY2(got, expected.name.c_str());
        QVERIFY2(got->dtype == expected.dtype, expected.name.c_str());
        QCOMPARE(got->shape, expected.shape);
        QCOMPARE(got->byteSize(), expected.byteSize());
        QVERIFY2(std::memcmp(got->data, expected.data, expected.byteSize()) == 0, expected.name.c_str());
    }
}

} // namespace

class tst_ShardingFolder : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void piecesJoinWhole()
    {
        QTemporaryDir dir;
        writeFolder(dir.filePath("m"), kIndex);
        auto joined = joinShardedFolder(dir.filePath("m").toStdString());
        QVERIFY2(joined, joined ? "" : joined.error().toString().c_str());
        QCOMPARE(joined->size(), size_t(2));
        for (const auto &t : *joined) {
            std::vector<float> values(t.bytes.size() / 4);
            std::memcpy(values.data(), t.bytes.data(), t.bytes.size());
            if (t.name == "fc.weight") {
                QCOMPARE(t.shape, (std::vector<int64_t>{2, 3}));
                QCOMPARE(values, (std::vector<float>{1, 2, 3, 4, 5, 6}));
            } else {
                QCOMPARE(values, (std::vector<float>{-1, -2}));
            }
        }
    }

    void inconsistentFoldersAreRefused()
    {
        QTemporaryDir dir;
        QByteArray gap = kIndex;
        gap.replace(R"("offset": 4, "numel": 2)", R"("offset": 3, "numel": 2)");
        writeFolder(dir.filePath("gap"), gap);
        QVERIFY2(errorOf(dir.filePath("gap")).contains("fc.weight: pieces overlap at value 3"),
                 qPrintable(errorOf(dir.filePath("gap"))));
        QByteArray outside = kIndex;
        outside.replace(R"("offset": 4, "numel": 2)", R"("offset": 5, "numel": 2)");
        writeFolder(dir.filePath("outside"), outside);
        QVERIFY2(errorOf(dir.filePath("outside")).contains("does not fit its shape"),
                 qPrintable(errorOf(dir.filePath("outside"))));
        QByteArray missing = kIndex;
        missing.replace(R"({"file": "rank0.safetensors", "offset": 0, "numel": 4},)", "");
        writeFolder(dir.filePath("missing"), missing);
        QVERIFY2(errorOf(dir.filePath("missing")).contains("fc.weight: a gap at value 0"),
                 qPrintable(errorOf(dir.filePath("missing"))));
        QByteArray escape = kIndex;
        escape.replace(R"("file": "rank1.safetensors", "offset": 0)", R"("file": "../rank1.safetensors", "offset": 0)");
        writeFolder(dir.filePath("escape"), escape);
        QVERIFY(errorOf(dir.filePath("escape")).contains("not a file name inside the folder"));
        writeFolder(dir.filePath("format"), QByteArray(kIndex).replace("accel-sharded-v1", "dcp"));
        QVERIFY(errorOf(dir.filePath("format")).contains("format is not accel-sharded-v1"));
        QVERIFY(errorOf(dir.filePath("nothing")).contains("index.json"));
    }

    // Regression (hardening round 3): the index's shape was trusted before the pieces were checked:
    // a 180-byte index claiming [1000000, 517] made merge-weights allocate 2 GB, then refuse it. Now
    // nothing is allocated until the pieces, as the files hold them, tile the shape. This index
    // claims 206 MB; the high-water mark of this process may not move by a third of that.
    void indexClaimsAreCheckedBeforeAllocating()
    {
        QTemporaryDir dir;
        QByteArray huge = kIndex;
        huge.replace(R"("shape": [2, 3])", R"("shape": [100000, 517])");
        writeFolder(dir.filePath("huge"), huge);
        const long before = peakRssKiB();
        const QString message = errorOf(dir.filePath("huge"));
        QVERIFY2(peakRssKiB() - before < 64 * 1024, qPrintable(QString::number(peakRssKiB() - before)));
        QVERIFY2(message.endsWith("index.json: tensor fc.weight: the pieces hold 6 of 51700000 values"),
                 qPrintable(message));
        const struct {
            const char *from;
            QByteArray to;
            const char *message;
        } cases[] = {
            {R"("shape": [2, 3])", R"("shape": [4611686018427387904, 4])", "has more than 2^63 values"},
            {R"("shape": [2, 3])", R"("shape": [2, -3])", "shape [2,-3]: expected whole numbers >= 0"},
            {R"("offset": 4, "numel": 2)", R"("offset": 4, "numel": 2.0)", "expected {\"file\": name"},
            {R"("offset": 4, "numel": 2)", R"("offset": 18446744073709551615, "numel": 2)", "expected {\"file\""},
            {R"("file": "rank1.safetensors", "offset": 4)", R"("file": "rank0.safetensors", "offset": 4)",
             "two pieces from rank0.safetensors"},
            {R"("fc.bias": {"shape": [2], "pieces": [{"file": "rank1.safetensors", "offset": 0, "numel": 2}]})",
             R"("fc.bias": [])", "tensor fc.bias: expected {\"shape\""},
            {R"("tensors": {)", R"("tensors": {"x": 1, )", "tensor x: expected"},
            {R"("ranks": 2)", R"("ranks": 2, "ranks": 3)", "duplicate key \"ranks\""},
            {R"("step": 0)", "\"step\": " + QByteArray(100000, '[') + QByteArray(100000, ']'),
             "JSON nested deeper than 64 levels"},
        };
        int i = 0;
        for (const auto &c : cases) {
            const QString folder = dir.filePath(QStringLiteral("case%1").arg(i++));
            writeFolder(folder, QByteArray(kIndex).replace(c.from, c.to));
            QVERIFY2(errorOf(folder).contains(QString::fromUtf8(c.message)), qPrintable(errorOf(folder)));
        }
    }

    void mergeWeightsCommand()
    {
        QTemporaryDir dir;
        writeFolder(dir.filePath("ckpt/pytorch_model_fsdp_0"), kIndex);
        // The checkpoint folder or the sharded folder itself; the output folder is created.
        for (const QString &input : {dir.filePath("ckpt"), dir.filePath("ckpt/pytorch_model_fsdp_0")}) {
            const QString out = dir.filePath("out" + QString::number(input.size()));
            const auto run = test::runAccel({"merge-weights", input, out});
            QVERIFY2(run.exitCode == 0, qPrintable(run.err));
            auto file = bigmodel::SafetensorsFile::open((out + "/model.safetensors").toStdString());
            QVERIFY(file);
            QCOMPARE((*file)->tensors().size(), size_t(2));
            QCOMPARE((*file)->metadata().at("format"), std::string("pt"));
            const auto *weight = (*file)->find("fc.weight");
            QVERIFY(weight);
            QCOMPARE(weight->shape, (std::vector<int64_t>{2, 3}));
            QCOMPARE(reinterpret_cast<const float *>(weight->data)[5], 6.0f);
        }
        QCOMPARE(test::runAccel({"merge-weights", "--help"}).exitCode, 0);
        const auto missing = test::runAccel({"merge-weights", dir.filePath("none"), dir.filePath("o")});
        QCOMPARE(missing.exitCode, 2);
        QVERIFY(missing.err.contains("does not exist"));
        const auto parent = test::runAccel({"merge-weights", dir.path(), dir.filePath("o")});
        QCOMPARE(parent.exitCode, 2);
        QVERIFY2(parent.err.contains("pytorch_model_fsdp_0"), qPrintable(parent.err));
        QCOMPARE(test::runAccel({"merge-weights", dir.filePath("ckpt"), dir.filePath("o"), "--unsafe_serialization"})
                     .exitCode,
                 2);
        const auto removed = test::runAccel(
            {"merge-weights", dir.filePath("ckpt"), dir.filePath("o2"), "--remove_checkpoint_dir", "--json"});
        QCOMPARE(removed.exitCode, 0);
        QVERIFY(removed.out.contains("\"schema\": \"accel.merge-weights\""));
        QVERIFY(!QFile::exists(dir.filePath("ckpt")));
        QVERIFY(QFile::exists(dir.filePath("o2/model.safetensors")));
    }

    // A real Accelerate SHARDED_STATE_DICT checkpoint, FSDP2 and FSDP1, written by 2 CPU ranks over gloo
    // (tests/runtime/dcp_checkpoint.py under torchrun: Accelerate's save_fsdp_model), merged by accel
    // and by `accelerate merge-weights`: the same tensors, names, dtypes, shapes and values.
    void mergesAccelerateDcpCheckpointsLikeAccelerate()
    {
        ACCEL_REQUIRE_ORACLE(python, "torch", "accelerate", "safetensors");
        QTemporaryDir dir;
        const QString script = QDir(test::sourceDir()).filePath("tests/runtime/dcp_checkpoint.py");
        const auto written = test::runProgram(
            python, {"-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", script, dir.path()},
            240000);
        QVERIFY2(written.exitCode == 0, qPrintable(written.err.right(4000)));
        const QString accelerate = QFileInfo(python).absolutePath() + "/accelerate";
        for (const QString version : {"fsdp2", "fsdp1"}) {
            const QString checkpoint = dir.filePath(version);
            QVERIFY(QFile::exists(checkpoint + "/pytorch_model_fsdp_0/.metadata"));
            const QString theirs = dir.filePath(version + "-accelerate");
            const auto reference =
                test::runProgram(accelerate, {"merge-weights", checkpoint + "/pytorch_model_fsdp_0", theirs}, 120000);
            QVERIFY2(reference.exitCode == 0, qPrintable(reference.err.right(4000)));
            // The checkpoint folder that holds pytorch_model_fsdp_0/, as Accelerate's save_state leaves it.
            const QString ours = dir.filePath(version + "-accel");
            const auto merged = test::runAccel({"merge-weights", checkpoint, ours, "--json"});
            QVERIFY2(merged.exitCode == 0, qPrintable(merged.err));
            QVERIFY2(merged.out.contains("\"format\": \"torch.distributed.checkpoint\""), qPrintable(merged.out));
            compareSafetensors(ours + "/model.safetensors", theirs + "/model.safetensors");
            if (QTest::currentTestFailed())
                return;
            auto file = bigmodel::SafetensorsFile::open((ours + "/model.safetensors").toStdString());
            QVERIFY((*file)->find("fc1.weight") && (*file)->find("gain") && (*file)->find("scale"));
            QCOMPARE((*file)->find("fc1.weight")->shape, (std::vector<int64_t>{7, 5}));
            QVERIFY((*file)->find("emb.weight")->dtype == bigmodel::DType::BF16);
        }
        // An optimizer folder holds values that are not tensors (param_groups): refused by name, as
        // Accelerate's tool refuses it ("expected torch.Tensor").
        const auto optimizer = test::runAccel({"merge-weights", dir.filePath("fsdp2/optimizer_0"), dir.filePath("o")});
        QCOMPARE(optimizer.exitCode, 2);
        QVERIFY2(optimizer.err.contains("optimizer.param_groups.0.lr is not a tensor"), qPrintable(optimizer.err));
        // What .metadata names must be in the files: a rank file cut short is an error naming it.
        const QString cut = dir.filePath("fsdp2/pytorch_model_fsdp_0/__1_0.distcp");
        QFile file(cut);
        QVERIFY(file.resize(100));
        const auto refused = test::runAccel({"merge-weights", dir.filePath("fsdp2"), dir.filePath("cut")});
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains("of __1_0.distcp, a file of 100 bytes are not there"), qPrintable(refused.err));
    }

    // .metadata is a pickle: only the classes DCP's Metadata holds are read, any other global is refused
    // by name before anything is made of it.
    void forbiddenPickleGlobalsAreRefused()
    {
        QTemporaryDir dir;
        const struct {
            QByteArray pickle;
            const char *message;
        } cases[] = {
            // protocol 2: GLOBAL os.system, called with "id"
            {QByteArray("\x80\x02"
                        "cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03.",
                        31),
             "pickle byte 2: refuses the global os.system"},
            // protocol 4: STACK_GLOBAL builtins.eval
            {QByteArray("\x80\x04\x8c\x08"
                        "builtins\x8c\x04"
                        "eval\x93\x8c\x01"
                        "1\x85R.",
                        25),
             "refuses the global builtins.eval"},
            // an allowed class that is not Metadata
            {QByteArray("\x80\x02"
                        "ctorch\nSize\n)R.",
                        17),
             "not torch.distributed.checkpoint's Metadata"},
            {QByteArray("\x80\x02]\x94(K\x01", 7), "ends before STOP"},
        };
        // Shapes no DCP file has, made of allowed opcodes only: a list 400,000 levels deep (torn
        // down recursively, its values overflowed the stack) and a list that holds itself.
        const QByteArray deep = QByteArray("\x80\x02") + QByteArray(400000, '(') + QByteArray(400000, 'l') + ".";
        const QByteArray loop("\x80\x02]q\x00h\x00"
                              "a.",
                              9);
        int i = 0;
        for (const QByteArray &pickle : {deep, loop}) {
            const QString folder = dir.filePath(QStringLiteral("shape%1").arg(i++));
            QDir().mkpath(folder);
            writeFile(folder + "/.metadata", pickle);
            const auto run = test::runAccel({"merge-weights", folder, dir.filePath("out")});
            QCOMPARE(run.exitCode, 2);
            QVERIFY2(run.err.contains("not torch.distributed.checkpoint's Metadata"), qPrintable(run.err));
        }
        for (const auto &c : cases) {
            const QString folder = dir.filePath(QStringLiteral("case%1").arg(i++));
            QDir().mkpath(folder);
            writeFile(folder + "/.metadata", c.pickle);
            const auto run = test::runAccel({"merge-weights", folder, dir.filePath("out")});
            QCOMPARE(run.exitCode, 2);
            QVERIFY2(run.err.contains(folder + "/.metadata") && run.err.contains(c.message), qPrintable(run.err));
        }
        QVERIFY(!QFile::exists(dir.filePath("out/model.safetensors")));
    }

    // A DeepSpeed checkpoint is refused naming zero_to_fp32.py; a folder that is no checkpoint says
    // what it holds.
    void otherFoldersAreNamed()
    {
        QTemporaryDir dir;
        QDir().mkpath(dir.filePath("ds/pytorch_model"));
        writeFile(dir.filePath("ds/latest"), "pytorch_model");
        writeFile(dir.filePath("ds/pytorch_model/mp_rank_00_model_states.pt"), "x");
        const auto deepspeed = test::runAccel({"merge-weights", dir.filePath("ds"), dir.filePath("o")});
        QCOMPARE(deepspeed.exitCode, 1);
        QVERIFY2(deepspeed.err.contains("DeepSpeed ZeRO checkpoint") &&
                     deepspeed.err.contains("python " + dir.filePath("ds/zero_to_fp32.py") + " " + dir.filePath("ds")),
                 qPrintable(deepspeed.err));
        // Given the tag folder, the command still names the checkpoint folder that holds the script.
        const auto tag = test::runAccel({"merge-weights", dir.filePath("ds/pytorch_model/"), dir.filePath("o")});
        QCOMPARE(tag.exitCode, 1);
        QVERIFY2(tag.err.contains("python " + dir.filePath("ds/zero_to_fp32.py") + " " + dir.filePath("ds") + " "),
                 qPrintable(tag.err));
        QDir().mkpath(dir.filePath("full"));
        writeFile(dir.filePath("full/model.safetensors"), "x");
        writeFile(dir.filePath("full/optimizer.bin"), "x");
        const auto neither = test::runAccel({"merge-weights", dir.filePath("full"), dir.filePath("o")});
        QCOMPARE(neither.exitCode, 2);
        QVERIFY2(neither.err.contains("found model.safetensors, optimizer.bin"), qPrintable(neither.err));
    }
};

QTEST_GUILESS_MAIN(tst_ShardingFolder)
#include "tst_shardingfolder.moc"
