"""The ext_proc messages the processor writes, built from Envoy's own protos (``xds-protos``).

Small constructors over ``envoy.service.ext_proc.v3``: a headers answer with its header
changes, a body answer (a replaced chunk in ``STREAMED`` mode, a streamed piece in
``FULL_DUPLEX_STREAMED`` mode), a trailers answer, an immediate reply, and the mode
override that stops Envoy sending the rest of a request callgate does not gate.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from envoy.config.core.v3 import base_pb2
from envoy.extensions.filters.http.ext_proc.v3 import processing_mode_pb2
from envoy.service.ext_proc.v3 import external_processor_pb2 as pb
from envoy.type.v3 import http_status_pb2

__all__ = [
    "FULL_DUPLEX",
    "STREAMED",
    "body_mode",
    "body_piece",
    "header_map",
    "headers_answer",
    "immediate",
    "replaced_chunk",
    "request_body_answer",
    "request_body_replaced",
    "trailers_answer",
]

Message = Any
"""A protobuf message of Envoy's (the generated classes carry no type information)."""

STREAMED: int = processing_mode_pb2.ProcessingMode.STREAMED
FULL_DUPLEX: int = processing_mode_pb2.ProcessingMode.FULL_DUPLEX_STREAMED
_SKIP = processing_mode_pb2.ProcessingMode.SKIP
_NONE = processing_mode_pb2.ProcessingMode.NONE


def header_map(headers: Message) -> dict[str, str]:
    """An ``HttpHeaders`` message's headers (keys lower-case; ``raw_value`` preferred)."""
    out: dict[str, str] = {}
    for entry in headers.headers.headers:
        value = entry.raw_value.decode("latin-1") if entry.raw_value else entry.value
        out[entry.key.lower()] = value
    return out


def body_mode(request: Message, *, response: bool = True) -> int:
    """A body mode Envoy says it runs (``protocol_config``): full duplex, else ``STREAMED``."""
    if request.HasField("protocol_config"):
        config = request.protocol_config
        mode = int(config.response_body_mode if response else config.request_body_mode)
        if mode == FULL_DUPLEX:
            return FULL_DUPLEX
    return STREAMED


def _mutation(set_headers: Iterable[tuple[str, str]], remove: Iterable[str]) -> Message:
    return pb.HeaderMutation(
        set_headers=[
            base_pb2.HeaderValueOption(
                header=base_pb2.HeaderValue(key=k, raw_value=v.encode("latin-1")),
                append_action=base_pb2.HeaderValueOption.OVERWRITE_IF_EXISTS_OR_ADD,
            )
            for k, v in set_headers
        ],
        remove_headers=list(remove),
    )


def headers_answer(
    *,
    response: bool,
    set_headers: Iterable[tuple[str, str]] = (),
    remove: Iterable[str] = (),
    skip_rest: bool = False,
    clear_route_cache: bool = False,
) -> Message:
    """The answer to request (or ``response``) headers, with its header changes.

    ``skip_rest``: ask Envoy to send nothing more of this exchange (honoured where the
    filter allows ``allow_mode_override``; otherwise the rest arrives and passes unchanged).
    ``clear_route_cache``: Envoy picks the route again (a changed ``:path`` may route
    elsewhere).
    """
    common = pb.CommonResponse(
        header_mutation=_mutation(set_headers, remove), clear_route_cache=clear_route_cache
    )
    answer = pb.HeadersResponse(response=common)
    out = pb.ProcessingResponse(response_headers=answer) if response else None
    if out is None:
        out = pb.ProcessingResponse(request_headers=answer)
    if skip_rest:
        out.mode_override.CopyFrom(
            processing_mode_pb2.ProcessingMode(
                request_body_mode=_NONE,
                response_header_mode=_SKIP,
                response_body_mode=_NONE,
                response_trailer_mode=_SKIP,
            )
        )
    return out


def request_body_answer() -> Message:
    """The request body goes on unchanged."""
    return pb.ProcessingResponse(request_body=pb.BodyResponse(response=pb.CommonResponse()))


def request_body_replaced(body: bytes) -> Message:
    """A buffered request body replaced by ``body``, its ``content-length`` set to match."""
    common = pb.CommonResponse(
        header_mutation=_mutation([("content-length", str(len(body)))], ()),
        body_mutation=pb.BodyMutation(body=body),
    )
    return pb.ProcessingResponse(request_body=pb.BodyResponse(response=common))


def replaced_chunk(body: bytes | None) -> Message:
    """``STREAMED`` mode: this response chunk is replaced by ``body`` (None: unchanged)."""
    if body is None:
        common = pb.CommonResponse()
    elif body:
        common = pb.CommonResponse(body_mutation=pb.BodyMutation(body=body))
    else:
        common = pb.CommonResponse(body_mutation=pb.BodyMutation(clear_body=True))
    return pb.ProcessingResponse(response_body=pb.BodyResponse(response=common))


def body_piece(body: bytes, *, end: bool, response: bool = True) -> Message:
    """``FULL_DUPLEX_STREAMED`` mode: the next piece of a body (``end``: the last)."""
    streamed = pb.StreamedBodyResponse(body=body, end_of_stream=end)
    common = pb.CommonResponse(body_mutation=pb.BodyMutation(streamed_response=streamed))
    if response:
        return pb.ProcessingResponse(response_body=pb.BodyResponse(response=common))
    return pb.ProcessingResponse(request_body=pb.BodyResponse(response=common))


def trailers_answer(*, response: bool) -> Message:
    """The trailers go on unchanged."""
    if response:
        return pb.ProcessingResponse(response_trailers=pb.TrailersResponse())
    return pb.ProcessingResponse(request_trailers=pb.TrailersResponse())


def immediate(status: int, body: bytes, content_type: str, details: str) -> Message:
    """Envoy answers the client itself (the request goes no further)."""
    reply = pb.ImmediateResponse(
        status=http_status_pb2.HttpStatus(code=status),
        headers=_mutation([("content-type", content_type)], ()),
        body=body,
        details=details,
    )
    return pb.ProcessingResponse(immediate_response=reply)
