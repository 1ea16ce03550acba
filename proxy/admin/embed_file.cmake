# Writes OUTPUT, a C++ source defining memshard::proxy::FUNCTION() as the
# bytes of INPUT (run as cmake -P at build time, so an edit of INPUT is
# rebuilt like a source). Usage:
#   cmake -DINPUT=page.html -DOUTPUT=page.cc -DFUNCTION=name -DHEADER=proxy/admin/x.h -P embed_file.cmake
file(READ "${INPUT}" bytes HEX)
string(LENGTH "${bytes}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${bytes}")
# 16 bytes a line keeps the generated file readable in a diff or a debugger.
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n    " bytes "${bytes}")
get_filename_component(input_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}" "// Generated from ${input_name} by embed_file.cmake: edit that file.
#include \"${HEADER}\"

namespace memshard::proxy {

namespace {
constexpr unsigned char kBytes[${size} + 1] = {
    ${bytes}0};
}  // namespace

std::string_view ${FUNCTION}() {
  return {reinterpret_cast<const char*>(kBytes), ${size}};
}

}  // namespace memshard::proxy
")
