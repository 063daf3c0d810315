"""``python -m metro_cli ...``: the ``metro`` command."""

import sys

from metro_cli.app import main

sys.exit(main())
