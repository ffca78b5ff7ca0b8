#!/bin/bash
# The option table (reducer/cli/options.c), `whittle COMMAND --help` and the guides in docs/
# agree (tests/docs-options.py): every option a command takes is in its --help and in its
# guide or reference pages, no --help or page names an option that no command takes (flags
# of other tools aside), and every option is in some page.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC.
set -uo pipefail
whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
/usr/bin/python3 "$src/tests/docs-options.py" "$src" "$whittle"
