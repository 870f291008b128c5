#pragma once
// The instance types a server knows, as the CLI checks files against them: a server started with
// `--instance-types FILE` knows more types than the client's built-in catalog, and a file naming one of them must
// not be refused by the client before the server sees it.
#include "client/http_client.h"
#include "core/model/catalog.h"

namespace allot::client {

// The server's catalog (GET /v1/instance-types: its built-in types and its --instance-types file's), its origin
// saying so. A server that does not answer with a list (an older one), or cannot be asked: the client's built-in
// types, and the origin says that the server's list was not had, so an error about an unknown type tells why.
Catalog server_catalog(ApiClient& api);

}  // namespace allot::client
