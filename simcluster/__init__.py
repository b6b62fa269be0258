"""simcluster: a discrete-event simulator of AI training clusters, calibrated from real traces."""

__version__ = "0.1.0"



def code_digest() -> str:
    """sha256 (first 16 hex digits) of the package's own source files: a stored sweep point computed by other code is
    not reused (sweep/spec.py puts it in every point's hash)."""
    if "code" not in _DIGEST:
        import hashlib
        from pathlib import Path

        root = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        _DIGEST["code"] = h.hexdigest()[:16]
    return _DIGEST["code"]


_DIGEST: dict[str, str] = {}
