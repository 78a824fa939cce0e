// The holder Accelerator::wrap returns (core/runtime/strategy/shardedmodule.h) does not own the
// module it wraps: a model that keeps the holder of its own root unit (as the gpt recipe and
// every FSDP-style program does) is freed with its last owner instead of keeping itself alive.
#include "core/runtime/accelerator.h"
#include "core/runtime/strategy/shardedmodule.h"

#include <QTest>

#include <torch/torch.h>

using accel::runtime::Accelerator;
using accel::runtime::ShardedModule;

namespace {

struct TwoLayers : torch::nn::Module {
    TwoLayers()
    {
        first = register_module("first", torch::nn::Linear(4, 8));
        second = register_module("second", torch::nn::Linear(8, 2));
    }
    torch::Tensor forward(const torch::Tensor &x)
    {
        const auto body = [&] { return second((*inner)([&] { return first(x); })); };
        return root ? (*root)(body) : body();
    }
    torch::nn::Linear first{nullptr}, second{nullptr};
    std::shared_ptr<ShardedModule> inner, root;
};

} // namespace

class tst_ShardedModule : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void modelKeepingItsRootHolderIsFreed_data()
    {
        QTest::addColumn<bool>("prepared");
        QTest::newRow("wrapped") << false;
        QTest::newRow("wrapped and prepared") << true;
    }
    void modelKeepingItsRootHolderIsFreed()
    {
        QFETCH(bool, prepared);
        std::weak_ptr<torch::nn::Module> watched;
        std::weak_ptr<ShardedModule> rootHolder;
        {
            auto accelerator = Accelerator::create();
            QVERIFY2(accelerator, accelerator ? "" : accelerator.error().message.c_str());
            auto model = std::make_shared<TwoLayers>();
            model->inner = (*accelerator)->wrap(model->first.ptr());
            model->root = (*accelerator)->wrap(model);
            rootHolder = model->root;
            watched = model;
            QCOMPARE(model->root->module().get(), static_cast<torch::nn::Module *>(model.get()));
            if (prepared) {
                (*accelerator)->prepareModel(model);
                QCOMPARE(model->forward(torch::ones({3, 4})).sizes(), (std::vector<int64_t>{3, 2}));
            }
        }
        // Before, holder and model owned each other: both outlived the Accelerator and the program's
        // last pointer (LeakSanitizer's report on every accel-worker run of the gpt recipe).
        QVERIFY(watched.expired());
        QVERIFY(rootHolder.expired());
    }
};

QTEST_GUILESS_MAIN(tst_ShardedModule)
#include "tst_shardedmodule.moc"
