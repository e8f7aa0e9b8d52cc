"""accept6b flags sweep: accept5a's flags5.py run on this sweep's programs (every
ExecutionConfig field set alone away from its default; each must give the reference values
or raise UnsupportedError at compile). usage: flags6.py backend prog.py [prog.py ...]"""
from __future__ import annotations

import sys

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/accept5a")
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from flags5 import main  # noqa: E402

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
