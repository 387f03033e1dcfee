"""Hand-written files as an artifact's complete extraction in the data folder (``attnlab.data.artifacts``),
where ``artifacts.extract`` returns them without downloading anything, in this process and in worker
processes (they inherit ``ATTNLAB_DATA`` but not this process's monkeypatches)."""

import hashlib
import json
from pathlib import Path

from attnlab.data import artifacts


def mark_extraction(folder: Path, name: str) -> Path:
    """Mark ``folder`` a complete extraction of every member (``*``) of artifact ``name``: the marker file
    (``artifacts.MARKER``) lists each file under it with its SHA-256, as ``extract`` writes it. Returns
    ``folder``."""
    files = {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != artifacts.MARKER
    }
    marker = {"sha256": artifacts.get(name).sha256, "members": ["*"], "files": files}
    (folder / artifacts.MARKER).write_text(json.dumps(marker))
    return folder
