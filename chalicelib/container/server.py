"""The gRPC edge as a long-running process (``python -m chalicelib.container``), as the opt-in gRPC stack runs it.

1. The stage's configuration is read exactly as the Lambda functions read it: chalicelib/config.py from the
   environment (the stack gives the task the API function's environment, infra/grpc_stack.task_environment),
   and, deployed (``METRO_SECRETS_SSM_PATH``), the secrets from SSM Parameter Store (chalicelib/runtime.py). It
   refuses to start on whatever the functions refuse (an open stage, a missing or built-in secret), saying why.
2. It serves the gRPC edge (chalicelib/local/grpc_edge.start_grpc_server: google.pubsub.v1, the IAM mixin,
   StreamingPull, the standard health service and reflection) on ``0.0.0.0:METRO_GRPC_PORT`` with a pool of
   ``METRO_GRPC_WORKERS`` threads, of which open StreamingPulls take ``METRO_GRPC_MAX_STREAMS`` at most
   (chalicelib/container/streams.py), and prints one line when it listens.
3. On SIGTERM (ECS stopping the task; SIGINT too) it takes no new call and gives the calls in progress
   ``METRO_GRPC_GRACE_SECONDS``; then every call still open ends UNAVAILABLE. A StreamingPull never ends by
   itself, so every open stream ends that way: google-cloud-pubsub's subscriber retries UNAVAILABLE on a new
   stream, which the load balancer sends to another task. What the stream delivered and nobody acknowledged
   comes back when its deadline passes, as after any lost connection.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from dataclasses import dataclass
from types import FrameType
from typing import Any

from chalicelib import config, runtime
from chalicelib.container.streams import StreamLimit
from chalicelib.core.errors import MetroError
from chalicelib.local.grpc_edge import start_grpc_server

# urllib3's connection pool warns on every request beyond its size (store/aws.py: 64 per AWS client), which more
# than 64 streams long-polling at once make: one line per poll is noise, the extra connection is the cost.
QUIET = {"botocore": logging.WARNING, "boto3": logging.WARNING, "urllib3": logging.WARNING,
         "urllib3.connectionpool": logging.ERROR}
MISSING_PACKAGES = "the gRPC packages are not installed (the gRPC block of requirements-run.txt)"


@dataclass(frozen=True)
class Edge:
    """A running gRPC edge: the server, the port it listens on, its settings, its cap on open streams."""

    server: Any
    port: int
    settings: config.GrpcEdgeConfig
    streams: StreamLimit

    def stop(self) -> bool:
        """Stop as SIGTERM asks: no new call, the grace period for the calls in progress, then UNAVAILABLE for
        the rest. Whether it stopped within the grace period (and a few seconds more)."""
        done = self.server.stop(grace=self.settings.grace_seconds)
        return bool(done.wait(self.settings.grace_seconds + 5))


def start(settings: config.GrpcEdgeConfig) -> Edge:
    """Build the services as the functions do (secrets from SSM when deployed; raises what they refuse), then
    serve on every interface."""
    runtime.services()
    if not 0 < settings.max_streams < settings.workers:
        raise RuntimeError(f"METRO_GRPC_MAX_STREAMS ({settings.max_streams}) must be above 0 and below "
                           f"METRO_GRPC_WORKERS ({settings.workers}): the pool must keep threads for other calls")
    streams = StreamLimit(settings.max_streams)
    started = start_grpc_server(f"0.0.0.0:{settings.port}", settings.workers, interceptors=[streams])
    if started is None:
        raise RuntimeError(MISSING_PACKAGES)
    server, port = started
    return Edge(server, port, settings, streams)


def describe(edge: Edge) -> str:
    """The line printed once the edge listens (no secret in it)."""
    cfg = runtime.services().ctx.config
    aws = cfg.endpoint_url or f"AWS {cfg.region}"
    return (f"Metro gRPC edge listening on 0.0.0.0:{edge.port} ({edge.settings.workers} workers, at most "
            f"{edge.settings.max_streams} open streams; auth: {cfg.auth_mode}; {aws}; tables {cfg.resources_table}, "
            f"{cfg.messages_table}, {cfg.leases_table})")


def main() -> int:
    logging.basicConfig(level=config.log_level(), stream=sys.stdout, format="%(levelname)s %(name)s %(message)s")
    for name, level in QUIET.items():
        logging.getLogger(name).setLevel(level)
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    try:
        settings = config.GrpcEdgeConfig()
        edge = start(settings)
    except (RuntimeError, ValueError, MetroError) as exc:  # what to fix, without a traceback
        print(f"Metro cannot start: {getattr(exc, 'message', exc)}", file=sys.stderr, flush=True)
        return 1
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    print(describe(edge), flush=True)
    while not stopping.wait(1.0):
        pass
    print(f"Metro gRPC edge stopping ({edge.streams.open} open streams): calls in progress have "
          f"{settings.grace_seconds:g} s, then the open ones end UNAVAILABLE", flush=True)
    clean = edge.stop()
    print("Metro gRPC edge stopped" + ("" if clean else " (some calls outlived the grace period)"), flush=True)
    return 0
