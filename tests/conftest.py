"""Every test runs with the code-key check on: a cached computation that executes an attnlab module its key
does not cover raises (attnlab.codekeys)."""

import os

os.environ.setdefault("ATTNLAB_CHECK_CODE_KEYS", "1")
