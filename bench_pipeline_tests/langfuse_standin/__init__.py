"""Local Langfuse stand-in server for tests (see ``server.py`` for the endpoint list).

Usage::

    from bench_pipeline_tests.langfuse_standin import LangfuseStandIn

    with LangfuseStandIn() as standin:
        langfuse = Langfuse(public_key=standin.public_key, secret_key=standin.secret_key,
                            base_url=standin.base_url)
        ...
        standin.faults.fail("/api/public/scores", status=500)
"""

from .faults import Fault, FaultPlan, FiredFault
from .otlp import OtlpDecodeError, decode_json, decode_protobuf
from .server import ApiError, LangfuseStandIn, RequestLog, Response

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
