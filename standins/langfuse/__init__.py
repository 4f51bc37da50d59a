"""Local Langfuse stand-in server (see ``server.py`` for the endpoint list).

Usage::

    from standins.langfuse import LangfuseStandIn

    with LangfuseStandIn() as standin:
        langfuse = Langfuse(public_key=standin.public_key, secret_key=standin.secret_key,
                            base_url=standin.base_url)
        ...
        standin.faults.fail("/api/public/scores", status=500)

Layout: ``server.py`` (the stand-in: lifecycle, serving, routing), ``routes/`` (one module per
API area), ``storage.py`` (what is stored), ``rules.py`` (what the real server accepts, each
rule citing the langfuse/langfuse file it restates), ``sdk_types.py`` (bodies checked with the
SDK's generated types), ``auth.py``, ``parsing.py`` (bodies and query parameters),
``spans.py`` (span attributes and derived values), ``otlp.py`` (OTLP decoding),
``faults.py`` (injected faults), ``http_server.py`` (the HTTP/1.1 loop), ``messages.py``
(responses and request logs), ``timestamps.py``.
"""

from .faults import Fault, FaultPlan, FiredFault
from .messages import ApiError, RequestLog, Response
from .otlp import OtlpDecodeError, decode_json, decode_protobuf
from .server import LangfuseStandIn

__all__ = [
    "ApiError",
    "Fault",
    "FaultPlan",
    "FiredFault",
    "LangfuseStandIn",
    "OtlpDecodeError",
    "RequestLog",
    "Response",
    "decode_json",
    "decode_protobuf",
]
