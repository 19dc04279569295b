"""verdict.json on disk: versioned, checked on read."""

from __future__ import annotations

from pathlib import Path

import orjson

from verifier.judge.checks.load import RunFormatError
from verifier.judge.verdict import VERDICT_FORMAT, VERDICT_VERSION


def write_verdict(doc: dict, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"
    )
    return path


def read_verdict(path: Path | str) -> dict:
    """A verdict document; :class:`RunFormatError` (exit 2) if missing, corrupt or unknown."""
    path = Path(path)
    if not path.is_file():
        raise RunFormatError(path, "missing (run `verifier analyze` first)")
    try:
        doc = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise RunFormatError(path, f"not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != VERDICT_FORMAT:
        raise RunFormatError(path, "not a verdict document")
    if doc.get("version") != VERDICT_VERSION:
        raise RunFormatError(
            path,
            f"unknown verdict version {doc.get('version')!r} "
            f"(this verifier reads {VERDICT_VERSION})",
        )
    if not isinstance(doc.get("columns"), list) or "exit_code" not in doc:
        raise RunFormatError(path, "verdict document lacks columns or exit_code")
    return doc
