// The stats token: when the operator sets one (stats_token or
// stats_token_file in the config, or --stats-token-file), every
// HTTP request on the stats port must carry it, as `Authorization: Bearer
// TOKEN` (Prometheus' `authorization` or `bearer_token_file`, curl -H,
// `memshard top --token-file`) or as the password of Basic credentials
// with any user name (what a browser's login prompt sends).
#pragma once

#include <string>
#include <string_view>

namespace memshard::proxy {

// Whether the value of an Authorization header carries `token`.
bool authorization_carries(std::string_view header, std::string_view token);

// Compares two secrets in a time that depends on their lengths only, not
// on where they first differ.
bool same_secret(std::string_view a, std::string_view b);

// Reads a token file: its content without the line break at its end. False
// with `error` when the file cannot be read, is empty, is over 4 KiB or
// holds a byte that is not visible ASCII (a token is sent in a header).
bool read_stats_token(const std::string& path, std::string& token, std::string& error);

}  // namespace memshard::proxy
