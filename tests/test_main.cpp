// The tests' main (Catch2). Every test process, and every command it runs, keeps dop's on-disk caches (kernel forms
// made on the fly, program binaries) in the build tree, never in the user's ~/.cache: DOP_CACHE_DIR, unless the
// test's environment already sets it.
#define CATCH_CONFIG_RUNNER
#include <stdlib.h>

#include <catch2/catch.hpp>

int main(int argc, char* argv[]) {
  setenv("DOP_CACHE_DIR", DOP_BINARY_DIR "/test_cache", 0);
  return Catch::Session().run(argc, argv);
}
