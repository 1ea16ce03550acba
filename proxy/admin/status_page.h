// The status page (status_page.html beside this file), made part of the
// binary at build time (embed_file.cmake), so it is served from memory and
// needs nothing else: no file, no CDN, no font from outside.
#pragma once

#include <string_view>

namespace memshard::proxy {

std::string_view status_page_html();

}  // namespace memshard::proxy
