"""The service descriptors of google.pubsub.v1, for server reflection.

google-cloud-pubsub registers the messages of ``google.pubsub.v1`` in protobuf's default pool, but not its
services, so reflection could list Publisher, Subscriber and SchemaService but not describe them. This builds
one file that declares the three services from the transcoding table (api/rpc/transcoding.py) and
StreamingPull, over the messages already registered, and adds it to the default pool once.
"""

from __future__ import annotations

import functools
from collections import defaultdict

from google.protobuf import descriptor_pb2, descriptor_pool

from chalicelib.api.rpc.streaming import StreamingPullRequest, StreamingPullResponse
from chalicelib.api.rpc.transcoding import IAM, RPCS, SUBSCRIBER

FILE = "metro/google/pubsub/v1/services.proto"


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name=FILE, package="google.pubsub.v1", syntax="proto3")
    services: dict[str, descriptor_pb2.ServiceDescriptorProto] = defaultdict(descriptor_pb2.ServiceDescriptorProto)
    files: set[str] = set()
    for rpc in RPCS:
        if rpc.service == IAM:
            continue
        service = services[rpc.service]
        service.method.add(name=rpc.name, input_type="." + rpc.request.DESCRIPTOR.full_name,
                           output_type="." + rpc.response.DESCRIPTOR.full_name)
        files |= {rpc.request.DESCRIPTOR.file.name, rpc.response.DESCRIPTOR.file.name}
    services[SUBSCRIBER].method.add(name="StreamingPull", client_streaming=True, server_streaming=True,
                                    input_type="." + StreamingPullRequest.DESCRIPTOR.full_name,
                                    output_type="." + StreamingPullResponse.DESCRIPTOR.full_name)
    for full_name, service in sorted(services.items()):
        service.name = full_name.rsplit(".", 1)[1]
        proto.service.append(service)
    proto.dependency.extend(sorted(files))
    return proto


@functools.cache
def register() -> None:
    """Add the services to the default pool (once; a second call, or a pool that has them, changes nothing)."""
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(FILE)
    except KeyError:
        pool.Add(_file())
