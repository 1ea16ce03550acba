// The object the tests' shared precompiled header is built with (CMakeLists.txt).
