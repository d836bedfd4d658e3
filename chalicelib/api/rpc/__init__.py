"""Metro's gRPC edge: google.pubsub.v1's Publisher, Subscriber and SchemaService, and the IAM mixin, served
from the same method registry and dispatch as REST (api/rpc/transcoding.py), plus StreamingPull."""
