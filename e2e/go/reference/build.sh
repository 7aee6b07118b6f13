#!/usr/bin/env bash
# Builds e2e/go/reference (github.com/distribution/reference, the image-reference grammar of
# container runtimes) from its module and caches it: e2e/go/build-program.sh. Prints its path.
exec "$(dirname "${BASH_SOURCE[0]}")/../build-program.sh" reference github.com/distribution/reference
