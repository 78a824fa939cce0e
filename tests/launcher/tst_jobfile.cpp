// The job-file schema of the recipe form: defaults, validation messages, YAML round trips, the
// bundled demo job, and a written job that the real accel-worker runs (skipped without libtorch).
#include "launcher/jobfile.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

using accel::launcher::FieldIssue;
using accel::launcher::JobField;
using accel::launcher::JobFile;

namespace {

QString corpusPath()
{
    return QDir(accel::test::sourceDir()).filePath(QStringLiteral("resources/corpus/corpus.txt"));
}

bool hasIssue(const std::vector<FieldIssue> &issues, const std::string &key, const std::string &part = {})
{
    for (const FieldIssue &issue : issues) {
        if (issue.key == key && issue.message.find(part) != std::string::npos)
            return true;
    }
    return false;
}

} // namespace

class tst_JobFile : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void schemaHasTheDocumentedFields();
    void defaultsNeedOnlyTheData();
    void validationNamesFieldAndValue();
    void formFileFormRoundTrips();
    void readsTheBundledDemoJob();
    void rejectsOtherRecipesAndBadYaml();
    void aliasBombIsRefused();
    void repeatedKeyAndEmptyValueReadBack();
    void switchingRecipeKeepsSharedFields();
    void workerRunsAWrittenJob();
    void causalLmLoraSectionAndTargetList();
};

void tst_JobFile::schemaHasTheDocumentedFields()
{
    QCOMPARE(JobFile::formRecipes(), (std::vector<std::string>{"gpt", "mlp", "causal_lm"}));
    for (const char *key :
         {"model.n_layer", "model.n_head", "model.n_embd", "model.block_size", "data.corpus", "training.max_steps",
          "training.batch_size", "training.learning_rate", "training.warmup_steps", "training.weight_decay",
          "training.eval_every", "training.checkpoint_every", "training.mixed_precision", "seed"})
        QVERIFY2(JobFile::field("gpt", key), key);
    for (const char *key : {"mlp.data", "mlp.hidden", "mlp.optimizer", "mlp.momentum", "training.learning_rate",
                            "training.batch_size", "training.max_steps"})
        QVERIFY2(JobFile::field("mlp", key), key);
    QVERIFY(!JobFile::field("mlp", "model.n_head"));
    QVERIFY(JobFile::fields("torchscript").empty());
    // The worker's own defaults (core/worker): an omitted key and the form's default agree.
    QCOMPARE(JobFile::field("gpt", "model.n_head")->defaultValue, std::string("2"));
    QCOMPARE(JobFile::field("gpt", "training.max_steps")->defaultValue, std::string("100"));
    QCOMPARE(JobFile::field("mlp", "mlp.optimizer")->choices, (std::vector<std::string>{"sgd", "adamw"}));
}

void tst_JobFile::defaultsNeedOnlyTheData()
{
    JobFile gpt = JobFile::defaults("gpt");
    QCOMPARE(gpt.value("model.n_layer"), std::string("2"));
    auto issues = gpt.validate();
    QCOMPARE(issues.size(), size_t(1));
    QCOMPARE(issues.front().key, std::string("data.corpus"));
    gpt.setValue("data.corpus", corpusPath().toStdString());
    QVERIFY(gpt.validate().empty());
    QVERIFY(gpt.check());

    JobFile mlp = JobFile::defaults("mlp");
    QVERIFY(hasIssue(mlp.validate(), "mlp.data", "required"));
    QCOMPARE(mlp.value("mlp.hidden"), std::string("64, 64"));
}

void tst_JobFile::validationNamesFieldAndValue()
{
    JobFile job = JobFile::defaults("gpt");
    job.setValue("data.corpus", "/nonexistent/corpus.txt");
    job.setValue("model.n_head", "3");
    job.setValue("model.n_embd", "64");
    job.setValue("training.batch_size", "0");
    job.setValue("training.max_steps", "ten");
    job.setValue("training.learning_rate", "0");
    job.setValue("training.mixed_precision", "fp4");
    job.setValue("data.eval_fraction", "0.9");
    const auto issues = job.validate();
    QVERIFY(hasIssue(issues, "data.corpus", "/nonexistent/corpus.txt does not exist"));
    QVERIFY(hasIssue(issues, "model.n_embd", "divisible by model.n_head (3)"));
    QVERIFY(hasIssue(issues, "training.batch_size", "whole number from 1 up; got \"0\""));
    QVERIFY(hasIssue(issues, "training.max_steps", "got \"ten\""));
    QVERIFY(hasIssue(issues, "training.learning_rate", "greater than 0"));
    QVERIFY(hasIssue(issues, "training.mixed_precision", "expected one of (empty), no, fp16, bf16, fp8"));
    QVERIFY(hasIssue(issues, "data.eval_fraction", "from 0 to 0.5"));
    // Issues come in form order; check() reports the first with the file as context.
    const auto error = job.check("job.yaml");
    QVERIFY(!error);
    QCOMPARE(error.error().context, std::string("job.yaml"));
    QVERIFY(!job.save(QDir::temp().filePath("never-written.yaml").toStdString()));
    QVERIFY(!QFileInfo::exists(QDir::temp().filePath("never-written.yaml")));

    JobFile mlp = JobFile::defaults("mlp");
    mlp.setValue("mlp.hidden", "64, x");
    QVERIFY(hasIssue(mlp.validate(), "mlp.hidden", "separated by commas"));
    mlp.setValue("mlp.hidden", "[32 16]");
    QVERIFY(!hasIssue(mlp.validate(), "mlp.hidden"));
}

void tst_JobFile::formFileFormRoundTrips()
{
    QTemporaryDir dir;
    for (const std::string recipe : {"gpt", "mlp"}) {
        JobFile job = JobFile::defaults(recipe);
        const QString data = dir.filePath(QStringLiteral("data file.bin"));
        QFile(data).open(QIODevice::WriteOnly);
        job.setValue(recipe == "gpt" ? "data.corpus" : "mlp.data", data.toStdString());
        job.setValue("name", "tricky: \"name\" #1");
        job.setValue("seed", "7");
        job.setValue("training.mixed_precision", "no");
        job.setValue("training.learning_rate", "2.0e-3");
        job.setValue("training.shuffle", "false");
        if (recipe == "gpt") {
            job.setValue("sample.prompt", "In the evening, ");
            job.setValue("model.n_embd", "96");
            job.setValue("model.n_head", "3");
        } else {
            job.setValue("mlp.hidden", "128, 32, 8");
            job.setValue("mlp.optimizer", "adamw");
        }
        QVERIFY2(job.validate().empty(), job.validate().empty() ? "" : job.validate().front().message.c_str());
        const QString path = dir.filePath(QString::fromStdString(recipe) + ".yaml");
        QVERIFY(job.save(path.toStdString()));
        auto again = JobFile::load(path.toStdString());
        QVERIFY2(again, again ? "" : again.error().toString().c_str());
        QVERIFY2(*again == job, job.toYaml().c_str());
        QCOMPARE(again->toYaml(), job.toYaml());
        QCOMPARE(again->value("training.mixed_precision"), std::string("no"));
        QCOMPARE(again->value("name"), std::string("tricky: \"name\" #1"));
    }
}

void tst_JobFile::readsTheBundledDemoJob()
{
    const QString demo = QDir(accel::test::sourceDir()).filePath(QStringLiteral("resources/jobs/demo-gpt.yaml"));
    auto job = JobFile::load(demo.toStdString());
    QVERIFY2(job, job ? "" : job.error().toString().c_str());
    QCOMPARE(job->recipe(), std::string("gpt"));
    QCOMPARE(job->value("model.n_embd"), std::string("128"));
    QCOMPARE(job->value("training.max_steps"), std::string("300"));
    QCOMPARE(job->value("sample.prompt"), std::string("In the evening, "));
    // The relative corpus path is now absolute, so the job can be written anywhere.
    QCOMPARE(QFileInfo(QString::fromStdString(job->value("data.corpus"))).canonicalFilePath(),
             QFileInfo(corpusPath()).canonicalFilePath());
    QVERIFY(job->validate().empty());

    // Keys the schema does not know survive a round trip.
    auto extra = JobFile::parse("recipe: gpt\ndata: {corpus: c.txt}\nexperimental: {flag: true, sizes: [1, 2]}\n",
                                "/tmp/x/job.yaml");
    QVERIFY(extra);
    QCOMPARE(extra->value("data.corpus"), std::string("/tmp/x/c.txt"));
    QCOMPARE(extra->value("experimental.flag"), std::string("true"));
    auto reread = JobFile::parse(extra->toYaml(), "/tmp/x/job.yaml");
    QVERIFY(reread);
    QCOMPARE(reread->values(), extra->values());
}

void tst_JobFile::rejectsOtherRecipesAndBadYaml()
{
    auto plugin = JobFile::parse("recipe: plugin\nplugin: {library: x.so}\n", "p.yaml");
    QVERIFY(!plugin);
    QVERIFY(plugin.error().message.find("got \"plugin\"") != std::string::npos);
    auto broken = JobFile::parse("recipe: gpt\nmodel: [unclosed\n", "b.yaml");
    QVERIFY(!broken);
    QVERIFY2(broken.error().context.rfind("b.yaml: line ", 0) == 0, broken.error().context.c_str());
    QVERIFY(broken.error().message.find("invalid YAML: ") == 0);
    auto list = JobFile::parse("- recipe\n", "l.yaml");
    QVERIFY(!list);
    QVERIFY(!JobFile::load("/nonexistent/job.yaml"));
}

// Regression (hardening round 3): job files were not guarded like config files. The form's reader
// emitted every sequence with its aliases expanded: 644 bytes ran for 30 s, 819 bytes took 2.2 GB.
// This one expands to 1,000,000 values (the old reader took it); the guard stops at 100,000.
void tst_JobFile::aliasBombIsRefused()
{
    auto bomb = JobFile::parse(accel::test::yamlAliasBomb(6, "recipe: gpt\n").toStdString(), "bomb.yaml");
    QVERIFY(!bomb);
    QCOMPARE(bomb.error().code, accel::ErrorCode::InvalidInput);
    QVERIFY2(bomb.error().toString().rfind("bomb.yaml: line ", 0) == 0, bomb.error().toString().c_str());
    QVERIFY2(bomb.error().message == "more than 100000 values once YAML aliases (*name) are expanded (the limit for a "
                                     "job file)",
             bomb.error().message.c_str());
    // Nesting and size have their limits too; a file over 1 MiB is refused before it is read.
    auto deep = JobFile::parse("recipe: gpt\nx: " + std::string(100, '[') + std::string(100, ']') + "\n", "deep.yaml");
    QVERIFY(!deep);
    QCOMPARE(deep.error().message, std::string("nested deeper than 64 levels (the limit for a job file)"));
    QTemporaryDir dir;
    const QString big = dir.filePath(QStringLiteral("big.yaml"));
    QFile file(big);
    QVERIFY(file.open(QIODevice::WriteOnly));
    QVERIFY(file.resize((qint64(1) << 20) + 1));
    file.close();
    auto large = JobFile::load(big.toStdString());
    QVERIFY(!large);
    QCOMPARE(large.error().message,
             std::string("file too large: 1048577 bytes (the limit for this file is 1048576 bytes)"));
    // A few legitimate aliases still read.
    QVERIFY(JobFile::parse("recipe: gpt\nx: &v 3\ny: *v\n", "ok.yaml"));
}

// Found by fuzz_jobfile: a key given twice ("data:" as a value and again as a section) was kept twice
// by both readers, and the form wrote back one of them; and "dropout:" with no value replaced the
// default with "", which the form wrote back as nothing, so the file read again had the default.
void tst_JobFile::repeatedKeyAndEmptyValueReadBack()
{
    auto twice = JobFile::parse("recipe: gpt\ndata: x\ndata: {corpus: c.txt}\n", "twice.yaml");
    QVERIFY(!twice);
    QCOMPARE(twice.error().toString(),
             std::string("twice.yaml: line 3: the key data is given twice (first at line 2)"));
    auto empty = JobFile::parse("recipe: gpt\nmodel:\n  dropout:\n", "empty.yaml");
    QVERIFY(empty);
    QCOMPARE(empty->value("model.dropout"), JobFile::defaults("gpt").value("model.dropout"));
    auto again = JobFile::parse(empty->toYaml(), "empty.yaml");
    QVERIFY(again);
    QCOMPARE(again->values(), empty->values());
    // Found by fuzz_jobfile: keys were written unquoted, so a key starting with '>' became YAML's
    // block scalar indicator and the written file did not read back; values with control characters,
    // bytes outside UTF-8 (yaml-cpp's "\xE9") or YAML line breaks came back changed or refused.
    const std::string odd = "recipe: gpt\nname: \"a\\x01b\\xE9\\u2028c\\u0085\"\nmodel:\n  '>>key': 1\n  \"- x\": y\n"
                            "  list: [1, [2]]\n  text: '[not a list'\n  n_layer: \"2\\n3\"\n";
    auto keys = JobFile::parse(odd, "odd.yaml");
    QVERIFY2(keys, keys ? "" : keys.error().toString().c_str());
    auto back = JobFile::parse(keys->toYaml(), "odd.yaml");
    QVERIFY2(back, back ? "" : back.error().toString().c_str());
    QCOMPARE(back->values(), keys->values());
    QCOMPARE(back->value("model.>>key"), std::string("1"));
    // Keys are names: a dotted key stood for a path too, ambiguous beside the section it names.
    auto dotted = JobFile::parse("recipe: gpt\ntraining.max_steps: 5\ntraining: {max_steps: 7}\n", "dots.yaml");
    QVERIFY(!dotted);
    QCOMPARE(dotted.error().toString(),
             std::string("dots.yaml: line 2: the key \"training.max_steps\" holds a '.': write nested sections "
                         "(training: {max_steps: 5})"));
}

void tst_JobFile::switchingRecipeKeepsSharedFields()
{
    JobFile job = JobFile::defaults("gpt");
    job.setValue("training.max_steps", "33");
    job.setValue("seed", "5");
    job.setValue("model.n_layer", "6");
    job.setRecipe("mlp");
    QCOMPARE(job.recipe(), std::string("mlp"));
    QCOMPARE(job.value("training.max_steps"), std::string("33"));
    QCOMPARE(job.value("seed"), std::string("5"));
    QCOMPARE(job.value("model.n_layer"), std::string());
    QCOMPARE(job.value("mlp.optimizer"), std::string("sgd"));
}

void tst_JobFile::workerRunsAWrittenJob()
{
    const QString worker = QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"));
    if (!QFileInfo(worker).isExecutable())
        QSKIP("accel-worker is not built (it needs libtorch)");
    QTemporaryDir dir;
    JobFile job = JobFile::defaults("gpt");
    job.setValue("data.corpus", corpusPath().toStdString());
    job.setValue("name", "form-job");
    job.setValue("model.n_layer", "1");
    job.setValue("model.n_embd", "32");
    job.setValue("model.block_size", "16");
    job.setValue("training.max_steps", "3");
    job.setValue("training.batch_size", "2");
    job.setValue("training.log_every", "1");
    job.setValue("sample.length", "8");
    job.setValue("training.mixed_precision", "no");
    const QString path = dir.filePath(QStringLiteral("job.yaml"));
    QVERIFY(job.save(path.toStdString()));
    const auto result = accel::test::runProgram(
        worker, {path}, 120000, {},
        {QStringLiteral("RANK=0"), QStringLiteral("WORLD_SIZE=1"), QStringLiteral("LOCAL_RANK=0"),
         QStringLiteral("LOCAL_WORLD_SIZE=1"),
         QStringLiteral("MASTER_PORT=%1").arg(20000 + QCoreApplication::applicationPid() % 20000),
         QStringLiteral("OMP_NUM_THREADS=1"),
         QStringLiteral("ACCEL_RUN_DIR=%1").arg(dir.filePath(QStringLiteral("run")))});
    QVERIFY2(result.exitCode == 0, qPrintable(result.err + result.out));
    QVERIFY(QFileInfo::exists(dir.filePath(QStringLiteral("run/model.safetensors"))));
    QFile metrics(dir.filePath(QStringLiteral("run/metrics/rank0.jsonl")));
    QVERIFY(metrics.open(QIODevice::ReadOnly));
    QVERIFY(metrics.readAll().contains("\"loss\""));
}

// The Fine-tune flow's job: the lora section is written only with lora.r (the worker refuses any
// lora key without it, and so does the form), and lora.target_modules is a YAML list of names.
void tst_JobFile::causalLmLoraSectionAndTargetList()
{
    QTemporaryDir dir;
    const std::string folder = dir.path().toStdString();
    JobFile job = JobFile::defaults("causal_lm");
    job.setValue("model.path", folder);
    job.setValue("data.train", corpusPath().toStdString());
    for (const FieldIssue &issue : job.validate()) // full fine-tuning: no lora key
        QFAIL((issue.key + ": " + issue.message).c_str());
    QVERIFY(job.toYaml().find("lora") == std::string::npos);
    job.setValue("lora.alpha", "16");
    QVERIFY(hasIssue(job.validate(), "lora.alpha", "is set but lora.r is not"));
    job.setValue("lora.r", "8");
    job.setValue("lora.target_modules", "q_proj, v_proj");
    QVERIFY(job.validate().empty());
    const std::string yaml = job.toYaml();
    QVERIFY2(yaml.find("target_modules: [q_proj, v_proj]") != std::string::npos, yaml.c_str());
    auto back = JobFile::parse(yaml, folder + "/job.yaml");
    QVERIFY(back);
    QCOMPARE(back->value("lora.target_modules"), std::string("q_proj, v_proj"));
    job.setValue("lora.target_modules", "[]");
    QVERIFY(hasIssue(job.validate(), "lora.target_modules", "expected a list of names"));
}

QTEST_GUILESS_MAIN(tst_JobFile)
#include "tst_jobfile.moc"
