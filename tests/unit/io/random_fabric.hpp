// Random node.toml texts for node1 over a small fabric (up to three peers, three VPCs, six
// endpoints each, NAT on a random node, tenant ports on node1): one after another, they add,
// remove and change nodes, VPCs, NAT and endpoints.
#pragma once

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace andromeda::io::testing {

class RandomFabric {
public:
    explicit RandomFabric(std::uint32_t seed) : rng_(seed) {}

    std::string next() {
        std::string text = "[node]\nname = \"node1\"\nunderlay = \"eth1\"\naddress = \"192.168.1.1\"\n"
                           "[node.uplink]\ninterface = \"eth2\"\n";
        std::vector<std::string> nodes = {"node1"};
        std::vector<int> last_octets = {2, 3, 4, 5, 6};
        std::shuffle(last_octets.begin(), last_octets.end(), rng_);
        for (int n = 2; n <= 4; ++n) {
            if (coin()) continue;
            nodes.push_back("node" + std::to_string(n));
            text += "[[nodes]]\nname = \"node" + std::to_string(n) + "\"\naddress = \"192.168.1." +
                    std::to_string(last_octets[static_cast<std::size_t>(n)]) + "\"\n";
        }
        int port = 0;
        for (std::uint32_t vni : {100u, 200u, 300u}) {
            if (coin()) continue;
            text += "[[vpc]]\nname = \"v" + std::to_string(vni) + "\"\nvni = " + std::to_string(vni) +
                    "\ncidr = \"10.0.0.0/24\"\ngateway = \"10.0.0.1\"\nmtu = " + (coin() ? "1400" : "1450") + "\n";
            if (coin())
                text += "[vpc.nat]\ngateway_node = \"" + nodes[rng_() % nodes.size()] +
                        "\"\naddress = \"203.0.113." + std::to_string(vni / 100 + (coin() ? 10 : 20)) + "\"\n";
            for (int ip = 10; ip < 16; ++ip) {
                if (coin()) continue;
                const std::string& node = nodes[rng_() % nodes.size()];
                text += "[[vpc.endpoint]]\nip = \"10.0.0." + std::to_string(ip) + "\"\nmac = \"02:00:00:00:0" +
                        std::to_string(rng_() % 3) + ":" + std::to_string(ip) + "\"\nnode = \"" + node + "\"\n";
                if (node == "node1") text += "port = \"tap" + std::to_string(port++) + "\"\n";
            }
        }
        return text;
    }

private:
    bool coin() { return (rng_() & 1) != 0; }
    std::mt19937 rng_;
};

}  // namespace andromeda::io::testing
