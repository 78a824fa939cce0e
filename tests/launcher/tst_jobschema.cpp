// The one job schema (core/common/jobschema.h) drives accel-worker's job reader, the studio's
// recipe form (launcher::JobFile) and the docs table: for every field of every recipe, both
// readers take the same default and refuse and accept the same values with the same message.
#include "core/common/jobschema.h"
#include "core/worker/jobspec.h"
#include "launcher/jobfile.h"
#include "tests/helpers/testsupport.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <sstream>

using namespace accel;
using T = jobs::JobField::Type;

namespace {

std::string number(double value)
{
    std::ostringstream out;
    out.precision(17);
    out << value;
    return out.str();
}

// Values just outside the field's range, and values inside it (ends included where allowed).
std::vector<std::string> outside(const jobs::JobField &f)
{
    std::vector<std::string> out;
    if (f.type == T::Integer) {
        out.push_back(number(f.minimum - 1));
        if (f.maximum < jobs::kUnbounded)
            out.push_back(number(f.maximum + 1));
        out.push_back("2.5");
        out.push_back("many");
    } else if (f.type == T::Number) {
        out.push_back(f.minimumExclusive ? number(f.minimum) : number(f.minimum - 0.5));
        out.push_back(number(f.maximum * 2 + 1));
        out.push_back("nan");
        out.push_back("x1");
    } else if (f.type == T::Boolean) {
        out.push_back("maybe");
    } else if (f.type == T::Choice) {
        out.push_back("nonsense");
    } else if (f.type == T::IntegerList) {
        out.push_back("[0]");
        out.push_back("[4, x]");
    } else if (f.type == T::TextList) {
        out.push_back("[]");
    }
    return out;
}

std::vector<std::string> inside(const jobs::JobField &f)
{
    // 64 and 32 (within the range) keep the gpt shape's n_embd divisible by n_head.
    if (f.type == T::Integer)
        return {number(std::clamp(64.0, f.minimum, f.maximum)), number(std::clamp(32.0, f.minimum, f.maximum))};
    if (f.type == T::Number)
        return {number(f.minimumExclusive ? f.minimum + 1e-3 : f.minimum), number(f.maximum)};
    if (f.type == T::Boolean)
        return {"true", "off"};
    if (f.type == T::Choice)
        return {f.choices.back()};
    if (f.type == T::IntegerList)
        return {"[8, 4]"};
    if (f.type == T::TextList)
        return {"[q_proj, v_proj]", "all-linear"};
    return {};
}

// "a.b.c" = value entries as YAML sections (the job readers refuse keys holding a '.').
std::string nestedYaml(const std::vector<std::pair<std::string, std::string>> &entries)
{
    struct Node {
        std::string name, value;
        std::vector<Node> children;
    };
    Node root;
    for (const auto &[key, value] : entries) {
        Node *node = &root;
        std::istringstream parts(key);
        for (std::string part; std::getline(parts, part, '.');) {
            auto it = std::find_if(node->children.begin(), node->children.end(),
                                   [&](const Node &n) { return n.name == part; });
            if (it == node->children.end()) {
                node->children.push_back({part, {}, {}});
                it = node->children.end() - 1;
            }
            node = &*it;
        }
        node->value = value;
    }
    std::string out;
    std::function<void(const Node &, int)> emit = [&](const Node &node, int depth) {
        for (const Node &child : node.children) {
            out += std::string(size_t(depth) * 2, ' ') + child.name + ":";
            out += child.children.empty() ? " " + child.value + "\n" : "\n";
            emit(child, depth + 1);
        }
    };
    emit(root, 0);
    return out;
}

QString readText(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
}

} // namespace

class tst_JobSchema : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    std::string m_file; // an existing file for the required paths

    // A job of `recipe` with its required paths filled and `key: value` set.
    std::string jobText(const std::string &recipe, const std::string &key = {}, const std::string &value = {}) const
    {
        std::vector<std::pair<std::string, std::string>> entries{{"recipe", recipe}};
        for (const jobs::JobField &f : jobs::fields(recipe)) {
            if (f.required && f.key != key)
                entries.emplace_back(f.key, "\"" + m_file + "\"");
        }
        if (!key.empty())
            entries.emplace_back(key, value);
        return nestedYaml(entries);
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_file = m_dir.filePath(QStringLiteral("data.bin")).toStdString();
        QFile file(QString::fromStdString(m_file));
        QVERIFY(file.open(QIODevice::WriteOnly));
    }

    // Each recipe's fields are unique, every default fits its own field, and the form's recipes
    // are the schema's.
    void schemaIsConsistent()
    {
        for (const std::string &recipe : jobs::knownRecipes()) {
            QVERIFY2(!jobs::fields(recipe).empty(), recipe.c_str());
            std::set<std::string> keys;
            for (const jobs::JobField &f : jobs::fields(recipe)) {
                QVERIFY2(keys.insert(f.key).second, (recipe + ": " + f.key).c_str());
                QVERIFY2(jobs::valueProblem(f, f.defaultValue).empty(), (recipe + ": " + f.key).c_str());
                QVERIFY2(!(f.required && !f.defaultValue.empty()), f.key.c_str());
            }
        }
        QVERIFY(jobs::fields("nonsense").empty());
        for (const std::string &recipe : launcher::JobFile::formRecipes())
            QCOMPARE(launcher::JobFile::fields(recipe).size(), jobs::fields(recipe).size());
    }

    // docs/jobs.md's table is the schema's own rendering.
    void docsTableIsTheSchema()
    {
        const QString docs = readText(test::sourceDir() + QStringLiteral("/docs/jobs.md"));
        QVERIFY(!docs.isEmpty());
        const QString table = QString::fromStdString(jobs::markdownTable(jobs::knownRecipes()));
        QVERIFY2(docs.contains(table), qPrintable(QStringLiteral("docs/jobs.md lacks the schema's table:\n") + table));
    }

    // The form refuses every out-of-range value with the schema's message and accepts the
    // in-range ones.
    void formFollowsTheSchema()
    {
        for (const std::string &recipe : launcher::JobFile::formRecipes()) {
            for (const jobs::JobField &f : launcher::JobFile::fields(recipe)) {
                for (const std::string &bad : outside(f)) {
                    auto job = launcher::JobFile::defaults(recipe);
                    job.setValue(f.key, bad);
                    const auto issues = job.validate();
                    const auto it = std::find_if(issues.begin(), issues.end(),
                                                 [&](const launcher::FieldIssue &i) { return i.key == f.key; });
                    QVERIFY2(it != issues.end(), (f.key + " = " + bad).c_str());
                    QCOMPARE(it->message, jobs::valueProblem(f, bad));
                }
                for (const std::string &good : inside(f)) {
                    auto job = launcher::JobFile::defaults(recipe);
                    if (f.key.rfind("lora.", 0) == 0 && f.key != "lora.r")
                        job.setValue("lora.r", "8"); // causal_lm: lora keys apply with lora.r only
                    job.setValue(f.key, good);
                    for (const auto &issue : job.validate())
                        QVERIFY2(issue.key != f.key, (f.key + " = " + good + ": " + issue.message).c_str());
                }
            }
        }
    }

    // accel-worker's reader refuses the same values, naming the file and key with the schema's
    // message, accepts the in-range ones, and reads an absent key as the schema's default.
    void workerFollowsTheSchema()
    {
        const std::string path = m_dir.filePath(QStringLiteral("job.yaml")).toStdString();
        int refused = 0, accepted = 0;
        for (const std::string &recipe : jobs::knownRecipes()) {
            auto plain = worker::JobSpec::parse(jobText(recipe), path);
            QVERIFY2(plain, (recipe + ": " + (plain ? "" : plain.error().message)).c_str());
            for (const jobs::JobField &f : jobs::fields(recipe)) {
                for (const std::string &bad : outside(f)) {
                    auto job = worker::JobSpec::parse(jobText(recipe, f.key, bad), path);
                    QVERIFY2(!job, (recipe + ": " + f.key + " = " + bad + " accepted").c_str());
                    QCOMPARE(job.error().message, f.key + ": " + jobs::valueProblem(f, bad));
                    QCOMPARE(job.error().context, path);
                    ++refused;
                }
                for (const std::string &good : inside(f)) {
                    auto job = worker::JobSpec::parse(jobText(recipe, f.key, good), path);
                    QVERIFY2(job,
                             (recipe + ": " + f.key + " = " + good + ": " + (job ? "" : job.error().message)).c_str());
                    ++accepted;
                }
                if (f.defaultValue.empty())
                    continue;
                switch (f.type) {
                case T::Integer:
                    QCOMPARE(number(double(plain->integer(f.key))), number(std::stod(f.defaultValue)));
                    break;
                case T::Number:
                    QCOMPARE(plain->number(f.key), std::stod(f.defaultValue));
                    break;
                case T::Boolean:
                    QCOMPARE(plain->boolean(f.key), *jobs::parseBoolean(f.defaultValue));
                    break;
                case T::IntegerList:
                    QCOMPARE(plain->integers(f.key).size(), jobs::splitList(f.defaultValue).size());
                    break;
                default:
                    QCOMPARE(plain->text(f.key), f.defaultValue);
                }
            }
            // A required value that is missing is named with what it should be.
            for (const jobs::JobField &f : jobs::fields(recipe)) {
                if (!f.required)
                    continue;
                std::vector<std::pair<std::string, std::string>> entries{{"recipe", recipe}};
                for (const jobs::JobField &other : jobs::fields(recipe)) {
                    if (other.required && other.key != f.key)
                        entries.emplace_back(other.key, "\"" + m_file + "\"");
                }
                auto job = worker::JobSpec::parse(nestedYaml(entries), path);
                QVERIFY(!job);
                QCOMPARE(job.error().message, f.key + ": missing (" + f.help + ")");
            }
        }
        QVERIFY(refused > 200);
        QVERIFY(accepted > 150);

        // The settings the training loop uses are the schema's defaults.
        auto gpt = worker::JobSpec::parse(jobText("gpt"), path);
        QVERIFY(gpt);
        QCOMPARE(gpt->training.maxSteps, int64_t(100));
        QCOMPARE(gpt->training.learningRate, 3.0e-4);
        QCOMPARE(gpt->training.bucketCapMb, 25.0);
        QCOMPARE(gpt->training.resume, std::string("auto"));
        QVERIFY(gpt->training.shuffle);
        QCOMPARE(gpt->seed, uint64_t(42));
        // mlp.hidden absent: the documented [64, 64], as the form writes it.
        auto mlp = worker::JobSpec::parse(jobText("mlp"), path);
        QVERIFY(mlp);
        QCOMPARE(mlp->integers("mlp.hidden"), (std::vector<int64_t>{64, 64}));
        // Case-insensitive choices read in lower case; YAML booleans in any spelling.
        auto upper = worker::JobSpec::parse(jobText("gpt", "training.mixed_precision", "BF16"), path);
        QVERIFY(upper);
        QCOMPARE(upper->training.mixedPrecision, std::string("bf16"));
        auto yes = worker::JobSpec::parse(jobText("gpt", "training.checkpoint_at_end", "Yes"), path);
        QVERIFY(yes);
        QVERIFY(yes->training.checkpointAtEnd);
        // A key outside the recipe's schema is a programming error, not a silent zero.
        QVERIFY_THROWS_EXCEPTION(std::logic_error, gpt->integer("mlp.classes"));
    }
};

QTEST_GUILESS_MAIN(tst_JobSchema)
#include "tst_jobschema.moc"
