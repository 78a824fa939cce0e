// A c10d store whose values are signed with the run's secret (core/common/runtoken.h): every value
// is stored as HMAC-SHA256(secret, key, value) followed by the value, and a value read back must
// carry the right signature for its key, else reading it throws (naming the key). The secret
// never leaves the ranks' environments; the store only ever sees signatures. Another local user
// who connects to the run's loopback store can still read values and overwrite keys (which fails
// the run), but cannot make a rank use a value the run did not write: a shared-memory segment
// name, a gloo address. Counters (add) are not signed; a changed counter only stalls or fails the
// run. Includes libtorch's store header: only torch .cpp files include it.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <string>

namespace accel::runtime {

class SignedStore : public c10d::Store {
public:
    SignedStore(c10::intrusive_ptr<c10d::Store> inner, std::string secret);

    c10::intrusive_ptr<c10d::Store> clone() override;
    void set(const std::string &key, const std::vector<uint8_t> &value) override;
    std::vector<uint8_t> compareSet(const std::string &key, const std::vector<uint8_t> &expected,
                                    const std::vector<uint8_t> &desired) override;
    std::vector<uint8_t> get(const std::string &key) override;
    std::vector<std::vector<uint8_t>> multiGet(const std::vector<std::string> &keys) override;
    void multiSet(const std::vector<std::string> &keys, const std::vector<std::vector<uint8_t>> &values) override;
    int64_t add(const std::string &key, int64_t value) override;
    bool deleteKey(const std::string &key) override;
    bool check(const std::vector<std::string> &keys) override;
    int64_t getNumKeys() override;
    void wait(const std::vector<std::string> &keys) override;
    void wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout) override;
    const std::chrono::milliseconds &getTimeout() const noexcept override;
    void setTimeout(const std::chrono::milliseconds &timeout) override;

    // The stored form of `value` under `key`, and its inverse (throws when the signature is not
    // the secret's for this key and value).
    static std::vector<uint8_t> sign(const std::string &secret, const std::string &key,
                                     const std::vector<uint8_t> &value);
    static std::vector<uint8_t> verify(const std::string &secret, const std::string &key,
                                       const std::vector<uint8_t> &stored);

private:
    c10::intrusive_ptr<c10d::Store> m_inner;
    std::string m_secret;
};

} // namespace accel::runtime
