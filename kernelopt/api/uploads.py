"""Reading a multipart submission with the size limit enforced while the body streams in.

Content-Length is checked first (a cheap early 413) but not trusted: the body is counted
as it arrives (chunked uploads have no Content-Length at all) and parsing stops as soon as
the count passes the limit. Nothing is stored until the whole request has been read and
checked, so a refused upload leaves no blob and no job row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import AsyncGenerator

from fastapi import HTTPException, Request, status
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

# Room for multipart boundaries, part headers and the small text fields (options, tag).
FORM_OVERHEAD_BYTES = 256 * 1024
MAX_TEXT_FIELD_BYTES = 64 * 1024


class UploadTooLarge(Exception):
    pass


@dataclass
class Submission:
    filename: str
    data: bytes
    weights: bytes | None
    options_text: str | None
    tag: str | None


def too_large(limit: int) -> HTTPException:
    return HTTPException(status.HTTP_413_CONTENT_TOO_LARGE,
                         detail=f"upload too large: the limit is {limit} bytes (KERNELOPT_MAX_UPLOAD_BYTES)")


async def _limited(request: Request, limit: int) -> AsyncGenerator[bytes, None]:
    seen = 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen > limit:
            raise UploadTooLarge()
        yield chunk


def _clean_filename(name: str | None) -> str:
    name = (name or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not name or name in (".", "..") or any(ord(c) < 32 for c in name):
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT,
                            detail="the uploaded `file` needs a file name (e.g. model.py)")
    return name[:255]


async def read_submission(request: Request, max_upload_bytes: int) -> Submission:
    content_type = request.headers.get("content-type", "")
    if content_type.lower().startswith("application/x-www-form-urlencoded"):
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT,
                            detail="missing `file`: send the job as multipart/form-data with a `file` part")
    if not content_type.lower().startswith("multipart/form-data"):
        raise HTTPException(status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
                            detail="send the job as multipart/form-data with a `file` part "
                                   "(and optional `weights`, `options`, `tag`)")
    body_limit = max_upload_bytes + FORM_OVERHEAD_BYTES
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > body_limit:
        raise too_large(max_upload_bytes)
    parser = MultiPartParser(request.headers, _limited(request, body_limit),
                             max_files=4, max_fields=16, max_part_size=MAX_TEXT_FIELD_BYTES)
    try:
        form = await parser.parse()
    except UploadTooLarge:
        raise too_large(max_upload_bytes) from None
    except MultiPartException as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=f"bad multipart body: {exc}") from None
    try:
        file = form.get("file")
        if not isinstance(file, UploadFile):
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT,
                                detail="missing `file`: the model or kernel file to optimize (a multipart file part)")
        weights = form.get("weights")
        if weights is not None and not isinstance(weights, UploadFile):
            if weights == "":
                weights = None
            else:
                raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT,
                                    detail="`weights` must be a file part (a safetensors file)")
        sizes = (file.size or 0) + ((weights.size or 0) if weights is not None else 0)
        if sizes > max_upload_bytes:
            raise too_large(max_upload_bytes)
        filename = _clean_filename(file.filename)
        data = await file.read()
        weights_data = await weights.read() if weights is not None else None
        if not data:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail="`file` is empty")
        options = form.get("options")
        if options is not None and not isinstance(options, str):
            options = (await options.read()).decode("utf-8", "replace")
        tag = form.get("tag")
        if tag is not None and not isinstance(tag, str):
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail="`tag` must be a text field")
        return Submission(filename=filename, data=data, weights=weights_data or None,
                          options_text=options, tag=tag or None)
    finally:
        await form.close()
