// The playground's capture reader against libpcap, on the reference captures in both formats,
// byte-swapped, and cut at every length.
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "playground/pcap_reader.hpp"

namespace andromeda::playground {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
}

std::vector<Bytes> frames_by_libpcap(const std::string& path) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t* p = pcap_open_offline(path.c_str(), errbuf);
    EXPECT_NE(p, nullptr) << errbuf;
    std::vector<Bytes> frames;
    if (!p) return frames;
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    while (pcap_next_ex(p, &header, &data) == 1) frames.emplace_back(data, data + header->caplen);
    pcap_close(p);
    return frames;
}

std::vector<Bytes> frames_by_reader(const Bytes& file, const CaptureFile& capture) {
    std::vector<Bytes> frames;
    for (const auto& f : capture.frames) {
        EXPECT_LE(f.offset + f.length, file.size());
        frames.emplace_back(file.begin() + static_cast<std::ptrdiff_t>(f.offset),
                            file.begin() + static_cast<std::ptrdiff_t>(f.offset + f.length));
    }
    return frames;
}

const std::string kData = ANDROMEDA_TESTDATA_DIR "/light-andromeda/";

TEST(CaptureReader, ReadsWhatLibpcapReadsInBothFormats) {
    for (const char* name : {"underlay.pcap", "tenant1.pcap", "underlay.pcapng"}) {
        const Bytes file = read_file(kData + name);
        ASSERT_FALSE(file.empty()) << name;
        const CaptureFile capture = read_capture(file);
        EXPECT_EQ(capture.error, "") << name;
        const auto expected = frames_by_libpcap(kData + name);
        ASSERT_GT(expected.size(), 3u) << name;
        EXPECT_EQ(frames_by_reader(file, capture), expected) << name;
        for (const auto& f : capture.frames) EXPECT_EQ(f.link_type, kLinkTypeEthernet) << name;
    }
    // Both formats of the same capture give the same frames.
    const Bytes classic = read_file(kData + "underlay.pcap"), ng = read_file(kData + "underlay.pcapng");
    EXPECT_EQ(frames_by_reader(classic, read_capture(classic)), frames_by_reader(ng, read_capture(ng)));
}

// A big-endian writer's file: every header field of the classic format byte-swapped.
TEST(CaptureReader, ReadsAByteSwappedClassicFile) {
    const Bytes file = read_file(kData + "underlay.pcap");
    Bytes swapped = file;
    const auto swap32 = [&](std::size_t at) { std::reverse(swapped.begin() + at, swapped.begin() + at + 4); };
    const auto swap16 = [&](std::size_t at) { std::reverse(swapped.begin() + at, swapped.begin() + at + 2); };
    swap32(0);
    swap16(4);
    swap16(6);
    for (std::size_t at : {8, 12, 16, 20}) swap32(at);
    for (std::size_t at = 24; at < file.size();) {
        const std::size_t caplen = file[at + 8] | file[at + 9] << 8 | file[at + 10] << 16 | file[at + 11] << 24;
        for (std::size_t k = 0; k < 16; k += 4) swap32(at + k);
        at += 16 + caplen;
    }
    const CaptureFile capture = read_capture(swapped);
    EXPECT_EQ(capture.error, "");
    EXPECT_EQ(frames_by_reader(swapped, capture), frames_by_libpcap(kData + "underlay.pcap"));
}

// Cut anywhere, a file gives the frames wholly before the cut and says where it broke; nothing
// read lies outside the bytes given.
TEST(CaptureReader, AFileCutAnywhereKeepsTheFramesBeforeTheCutAndSaysWhere) {
    for (const char* name : {"underlay.pcap", "underlay.pcapng"}) {
        const Bytes file = read_file(kData + name);
        const CaptureFile full = read_capture(file);
        const auto whole = frames_by_reader(file, full);
        for (std::size_t cut = 0; cut < file.size(); ++cut) {
            const Bytes part(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(cut));
            const CaptureFile capture = read_capture(part);
            const auto frames = frames_by_reader(part, capture);
            ASSERT_LE(frames.size(), whole.size()) << name << " cut at " << cut;
            for (std::size_t i = 0; i < frames.size(); ++i) EXPECT_EQ(frames[i], whole[i]) << name << " cut at " << cut;
            // A classic file cut between records looks whole; cut inside one it must say so.
            const bool between = cut == 24 || std::any_of(full.frames.begin(), full.frames.end(), [&](const auto& f) {
                return f.offset + f.length == cut;
            });
            if (std::string(name).ends_with(".pcap") && !between) {
                EXPECT_NE(capture.error, "") << name << " cut at " << cut;
            }
        }
    }
}

TEST(CaptureReader, RefusesWhatIsNoCaptureAndSurvivesNoise) {
    EXPECT_NE(read_capture(Bytes{}).error.find("not a capture file"), std::string::npos);
    const std::string text = "this is a text file, not a capture at all";
    EXPECT_NE(read_capture(Bytes(text.begin(), text.end())).error.find("neither a pcap magic"), std::string::npos);
    std::mt19937 rng(7);
    const Bytes ng = read_file(kData + "underlay.pcapng");
    for (int round = 0; round < 3000; ++round) {
        Bytes noisy = ng;
        for (int flips = 0; flips < 4; ++flips) noisy[rng() % noisy.size()] = static_cast<std::uint8_t>(rng());
        const CaptureFile capture = read_capture(noisy);
        for (const auto& f : capture.frames) ASSERT_LE(f.offset + f.length, noisy.size());
    }
}

}  // namespace
}  // namespace andromeda::playground
