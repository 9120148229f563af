"""``python -m envgym_gui.osworld import OSWORLD_DIR [--cache CACHE] ...``"""

import sys

from envgym_gui.osworld.cli import main

sys.exit(main())
