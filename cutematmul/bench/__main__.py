"""``python -m cutematmul.bench``: see ``cli`` for the options.

Imports: ``cli``.
"""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
