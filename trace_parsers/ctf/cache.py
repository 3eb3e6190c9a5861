"""A per-user cache of parsed TSDL metadata, keyed by content: Zephyr's 29 KB file parses in ~25 ms
and is the same for every trace of a Zephyr version, so ``crosstrace info`` on a small CTF trace
reads it back (~1 ms) instead of parsing it again (issue 18: ``info`` within 150 ms).

Where: ``$CROSSTRACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/crosstrace``, else
``~/.cache/crosstrace``; ``CROSSTRACE_CACHE_DIR=off`` (or ``0``) turns it off. One file per
metadata content, ``ctf-metadata-<key>.pickle``, where the key is the SHA-256 of the metadata
bytes *and of this parser's sources* (``tsdl.py``, ``types.py``, this file), so a changed parser
never reads what an older one wrote. Only metadata of at least :data:`MIN_BYTES` is cached (a small
one parses faster than the file opens).

A cache never decides a result: a file that cannot be read, is cut, unpickles to anything but a
:class:`~.types.Metadata`, or lies in a folder other users can write (on POSIX: the folder and the
file must belong to this user and not be group- or world-writable, since unpickling runs code) is
ignored and the metadata parsed again; a cache that cannot be written is skipped in silence.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .types import Metadata

__all__ = ["MIN_BYTES", "cache_dir", "key", "load", "store"]

#: Smallest metadata (bytes) worth caching.
MIN_BYTES = 8192
#: Values of ``CROSSTRACE_CACHE_DIR`` that turn the cache off.
OFF = ("off", "0", "no", "false")
_SOURCES = ("tsdl.py", "types.py", "cache.py")
_code_digest: bytes | None = None


def cache_dir() -> Path | None:
    """The cache folder, or None when the cache is off."""
    env = os.environ.get("CROSSTRACE_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in OFF or not env.strip() else Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "crosstrace"


def _code() -> bytes:
    """Digest of the parser's sources (empty when they cannot be read: then nothing is cached)."""
    global _code_digest
    if _code_digest is None:
        h = hashlib.sha256()
        try:
            for name in _SOURCES:
                h.update((Path(__file__).parent / name).read_bytes())
            _code_digest = h.digest()
        except OSError:
            _code_digest = b""
    return _code_digest


def key(mdata: bytes) -> str | None:
    """The cache key of a metadata file's bytes, or None when it is not cached."""
    code = _code()
    if len(mdata) < MIN_BYTES or not code:
        return None
    return hashlib.sha256(code + mdata).hexdigest()[:40]


def _path(mdata: bytes) -> Path | None:
    d, k = cache_dir(), key(mdata)
    return None if d is None or k is None else d / f"ctf-metadata-{k}.pickle"


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else (always true where there is no ``getuid``)."""
    getuid = getattr(os, "getuid", None)
    return getuid is None or (st.st_uid == getuid() and not st.st_mode & 0o022)


def load(mdata: bytes) -> Metadata | None:
    """The cached parse of ``mdata``, or None (not cached, off, unreadable or not ours)."""
    p = _path(mdata)
    if p is None:
        return None
    try:
        if not (_private(os.stat(p.parent)) and _private(os.stat(p))):
            return None
        import pickle

        with open(p, "rb") as f:
            meta = pickle.load(f)
    except Exception:  # a cache is never an error: unreadable, cut or foreign -> parse again
        return None
    return meta if type(meta) is Metadata else None


def store(mdata: bytes, meta: Metadata) -> None:
    """Save ``meta`` as the parse of ``mdata`` (atomically; nothing happens when it cannot)."""
    p = _path(mdata)
    if p is None:
        return
    tmp = None
    try:
        import pickle
        import tempfile  # here, not at the top: `info` reading a cached parse never needs it

        p.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".ctf-metadata-", dir=p.parent)
        with os.fdopen(fd, "wb") as f:
            pickle.dump(meta, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, p)
        tmp = None
    except Exception:  # read-only home, full disk, unpicklable: parse next time
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
