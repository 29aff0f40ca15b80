// A running daemon's pinned BPF map, opened from a test (the pins live in the machine's bpffs,
// visible from every namespace): its keys, lookups, and writes the daemon did not make.
#pragma once

#include <bpf/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

namespace andromeda::testing {

class PinnedMap {
public:
    explicit PinnedMap(const std::string& path) : fd_(bpf_obj_get(path.c_str())) {}
    ~PinnedMap() {
        if (fd_ >= 0) close(fd_);
    }
    PinnedMap(const PinnedMap&) = delete;
    PinnedMap& operator=(const PinnedMap&) = delete;

    [[nodiscard]] bool ok() const { return fd_ >= 0; }
    template <class K>
    [[nodiscard]] std::vector<K> keys() const {
        std::vector<K> out;
        K key{}, next{};
        const void* previous = nullptr;
        while (bpf_map_get_next_key(fd_, previous, &next) == 0) {
            out.push_back(next);
            key = next;
            previous = &key;
        }
        return out;
    }
    template <class K, class V>
    [[nodiscard]] bool contains(const K& key) const {
        V value{};
        return bpf_map_lookup_elem(fd_, &key, &value) == 0;
    }
    // 0, or the errno the kernel refused the write with.
    template <class K, class V>
    int insert(const K& key, const V& value) const {
        return bpf_map_update_elem(fd_, &key, &value, BPF_NOEXIST) == 0 ? 0 : errno;
    }
    template <class K>
    void erase(const K& key) const {
        (void)bpf_map_delete_elem(fd_, &key);
    }

private:
    int fd_;
};

}  // namespace andromeda::testing
