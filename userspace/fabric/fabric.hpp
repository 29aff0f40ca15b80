// andromeda::fabric, the control-plane model: everything a host needs to know about the VPCs,
// their endpoints and the underlay nodes, loaded from node.toml (docs/configuration.md).
//
//   FabricStore store;                        // one per andromedad
//   auto result = store.load_file(path);      // validate, diff, publish; errors leave it as is
//   auto reader = store.make_reader();        // one per worker thread
//   { auto fabric = reader.read();            // lock-free, whole-snapshot read section
//     const Endpoint* e = fabric->find_endpoint(vni, ip); }
#pragma once

#include "fabric/diff.hpp"
#include "fabric/errors.hpp"
#include "fabric/loader.hpp"
#include "fabric/model.hpp"
#include "fabric/publisher.hpp"
#include "fabric/snapshot.hpp"
#include "fabric/store.hpp"
