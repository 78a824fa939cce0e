#include "core/runtime/signedstore.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace accel::runtime {

namespace {

constexpr size_t kSignatureBytes = 32; // SHA-256

// HMAC over the key's length, the key and the value: no two (key, value) pairs sign alike.
std::vector<uint8_t> signature(const std::string &secret, const std::string &key, const uint8_t *value, size_t size)
{
    std::vector<uint8_t> message;
    const uint64_t keyLength = key.size();
    for (int shift = 0; shift < 64; shift += 8)
        message.push_back(uint8_t(keyLength >> shift));
    message.insert(message.end(), key.begin(), key.end());
    message.insert(message.end(), value, value + size);
    std::vector<uint8_t> mac(EVP_MAX_MD_SIZE);
    unsigned int length = 0;
    if (!HMAC(EVP_sha256(), secret.data(), int(secret.size()), message.data(), message.size(), mac.data(), &length) ||
        length != kSignatureBytes)
        throw std::runtime_error("rendezvous store: cannot compute HMAC-SHA256");
    mac.resize(length);
    return mac;
}

} // namespace

SignedStore::SignedStore(c10::intrusive_ptr<c10d::Store> inner, std::string secret)
    : c10d::Store(inner->getTimeout()), m_inner(std::move(inner)), m_secret(std::move(secret))
{}

std::vector<uint8_t> SignedStore::sign(const std::string &secret, const std::string &key,
                                       const std::vector<uint8_t> &value)
{
    std::vector<uint8_t> stored = signature(secret, key, value.data(), value.size());
    stored.insert(stored.end(), value.begin(), value.end());
    return stored;
}

std::vector<uint8_t> SignedStore::verify(const std::string &secret, const std::string &key,
                                         const std::vector<uint8_t> &stored)
{
    if (stored.size() >= kSignatureBytes) {
        const std::vector<uint8_t> expected =
            signature(secret, key, stored.data() + kSignatureBytes, stored.size() - kSignatureBytes);
        if (CRYPTO_memcmp(expected.data(), stored.data(), kSignatureBytes) == 0)
            return std::vector<uint8_t>(stored.begin() + kSignatureBytes, stored.end());
    }
    throw std::runtime_error("rendezvous store: the value of key '" + key.substr(0, 120) +
                             "' is not signed with this run's secret (ACCEL_RUN_TOKEN): another process wrote it");
}

c10::intrusive_ptr<c10d::Store> SignedStore::clone()
{
    return c10::make_intrusive<SignedStore>(m_inner->clone(), m_secret);
}

void SignedStore::set(const std::string &key, const std::vector<uint8_t> &value)
{
    m_inner->set(key, sign(m_secret, key, value));
}

std::vector<uint8_t> SignedStore::compareSet(const std::string &key, const std::vector<uint8_t> &expected,
                                             const std::vector<uint8_t> &desired)
{
    // An empty expected value means "not set yet" to c10d; a signed one is never empty.
    const std::vector<uint8_t> current = expected.empty() ? expected : sign(m_secret, key, expected);
    return verify(m_secret, key, m_inner->compareSet(key, current, sign(m_secret, key, desired)));
}

std::vector<uint8_t> SignedStore::get(const std::string &key)
{
    return verify(m_secret, key, m_inner->get(key));
}

std::vector<std::vector<uint8_t>> SignedStore::multiGet(const std::vector<std::string> &keys)
{
    std::vector<std::vector<uint8_t>> values;
    for (const std::string &key : keys)
        values.push_back(get(key));
    return values;
}

void SignedStore::multiSet(const std::vector<std::string> &keys, const std::vector<std::vector<uint8_t>> &values)
{
    for (size_t i = 0; i < keys.size() && i < values.size(); ++i)
        set(keys[i], values[i]);
}

int64_t SignedStore::add(const std::string &key, int64_t value)
{
    return m_inner->add(key, value);
}

bool SignedStore::deleteKey(const std::string &key)
{
    return m_inner->deleteKey(key);
}

bool SignedStore::check(const std::vector<std::string> &keys)
{
    return m_inner->check(keys);
}

int64_t SignedStore::getNumKeys()
{
    return m_inner->getNumKeys();
}

void SignedStore::wait(const std::vector<std::string> &keys)
{
    m_inner->wait(keys);
}

void SignedStore::wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout)
{
    m_inner->wait(keys, timeout);
}

const std::chrono::milliseconds &SignedStore::getTimeout() const noexcept
{
    return m_inner->getTimeout();
}

void SignedStore::setTimeout(const std::chrono::milliseconds &timeout)
{
    m_inner->setTimeout(timeout);
}

} // namespace accel::runtime
