"""``python -m chalicelib.container``: serve the gRPC edge until SIGTERM (the container image's command)."""

from __future__ import annotations

import sys

from chalicelib.container.server import main

sys.exit(main())
