"""`python -m infinipot.app.cli`: the same as the `infinipot` command."""

import sys

from infinipot.app.cli.main import main

sys.exit(main())
