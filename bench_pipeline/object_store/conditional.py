"""Conditional writes (create only if absent, delete only if unchanged): the publication lock
held in a bucket, S3 only."""

from __future__ import annotations

from .clients import StoreError, _Session, reason, session
from .locations import normalize, split


def _s3_error_code(exc: BaseException) -> str | None:
    """The S3 error code behind an exception (s3fs translates the client's errors)."""
    while exc is not None:
        response = getattr(exc, "response", None)
        if isinstance(response, dict) and isinstance(response.get("Error"), dict):
            return response["Error"].get("Code")
        exc = exc.__cause__ or exc.__context__
    return None


def _s3_only(s: _Session, url: str) -> None:
    if not hasattr(s.fs, "_call_s3"):
        raise StoreError("lock", url, f"the publication lock needs conditional writes (create only if absent), "
                                      f"implemented for s3:// only, not {split(url)[0]}://: use an s3:// folder or "
                                      f"a local folder every publisher shares")


def create_exclusive(url: str, data: bytes) -> str | None:
    """Write the object only if there is none yet (one PUT with ``If-None-Match: *``):
    its ETag, or None when another exists (S3 answers 412 to every later writer)."""
    url = normalize(url)
    _, bucket, key = split(url)
    try:
        with session(split(url)[0]) as s:
            _s3_only(s, url)
            return str(s.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")["ETag"])
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        if isinstance(exc, FileExistsError) or _s3_error_code(exc) in ("PreconditionFailed", "ConditionalRequestConflict"):
            return None
        raise StoreError("write", url, reason(exc, url)) from exc


def read_with_etag(url: str) -> tuple[bytes, str] | None:
    """An object's bytes and ETag from one GET; None when there is no such object."""
    url = normalize(url)
    _, bucket, key = split(url)
    try:
        with session(split(url)[0]) as s:
            _s3_only(s, url)

            async def get() -> tuple[bytes, str]:
                response = await s.fs._call_s3("get_object", Bucket=bucket, Key=key)
                body = response["Body"]
                try:
                    return await body.read(), str(response["ETag"])
                finally:
                    body.close()

            return s.run(get())
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        if (isinstance(exc, FileNotFoundError) and "bucket" not in str(exc).lower()) or _s3_error_code(exc) == "NoSuchKey":
            return None
        raise StoreError("read", url, reason(exc, url)) from exc


def delete_if_unchanged(url: str, etag: str) -> bool:
    """Delete the object only if its ETag is still ``etag`` (``If-Match``): whether this call
    deleted it (False: it changed or is gone)."""
    url = normalize(url)
    _, bucket, key = split(url)
    try:
        with session(split(url)[0]) as s:
            _s3_only(s, url)
            s.fs.call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=etag)
            return True
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        if isinstance(exc, FileNotFoundError) or _s3_error_code(exc) in ("PreconditionFailed", "NoSuchKey",
                                                                           "ConditionalRequestConflict"):
            return False
        raise StoreError("delete", url, reason(exc, url)) from exc
