#include "client/server_catalog.h"

#include "view/instance_type_json.h"

namespace allot::client {

Catalog server_catalog(ApiClient& api) {
  Catalog catalog = Catalog::builtin();
  auto types = api.get("/v1/instance-types");
  if (!types || !types->is_array()) {
    catalog.set_origin("the client's built-in types: the server's list could not be had" +
                       (types ? std::string(" (GET /v1/instance-types did not answer a list)") : " (" + types.error().message + ")"));
    return catalog;
  }
  // put, not add: the server's figures win, for a built-in type its policy file replaced.
  for (const auto& j : *types)
    if (auto t = view::instance_type_from_json(j)) (void)catalog.put(std::move(*t));
  catalog.set_origin("the server's: built in, and its --instance-types file's");
  return catalog;
}

}  // namespace allot::client
