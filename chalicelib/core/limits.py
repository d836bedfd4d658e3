"""Google Pub/Sub's documented limits, in one place."""

from chalicelib.core.errors import InvalidArgument

MAX_MESSAGE_BYTES = 10 * 1000 * 1000
MAX_REQUEST_BYTES = 10 * 1000 * 1000
MAX_MESSAGES_PER_PUBLISH = 1000
MAX_ATTRIBUTES = 100
MAX_ATTRIBUTE_KEY_BYTES = 256
MAX_ATTRIBUTE_VALUE_BYTES = 1024
MAX_ORDERING_KEY_BYTES = 1024
MAX_LABELS = 64
# Single message transforms (docs/transforms.md): per topic or subscription, and the size of one UDF's code
MAX_MESSAGE_TRANSFORMS = 5
MAX_UDF_CODE_BYTES = 20 * 1000

ACK_DEADLINE_DEFAULT = 10
ACK_DEADLINE_MIN = 10
ACK_DEADLINE_MAX = 600
MODIFY_DEADLINE_MAX = 600

RETENTION_DEFAULT = 7 * 24 * 3600
RETENTION_MIN = 10 * 60
RETENTION_MAX = 31 * 24 * 3600  # a topic's messageRetentionDuration
SUBSCRIPTION_RETENTION_MAX = 7 * 24 * 3600
EXPIRATION_DEFAULT = 31 * 24 * 3600

MAX_PULL_MESSAGES = 1000
MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100

DEAD_LETTER_DEFAULT_ATTEMPTS = 5
DEAD_LETTER_MIN_ATTEMPTS = 5
DEAD_LETTER_MAX_ATTEMPTS = 100
RETRY_BACKOFF_MAX = 600
RETRY_MIN_BACKOFF_DEFAULT = 10
RETRY_MAX_BACKOFF_DEFAULT = 600

# A Lambda behind API Gateway answers with at most 6 MB; leave room for JSON and base64.
MAX_PULL_RESPONSE_BYTES = 4 * 1000 * 1000
# acknowledge and modifyAckDeadline: Google refuses request payloads above 512 KiB.
MAX_ACK_REQUEST_BYTES = 524_288

# --- what the deployed path carries (API Gateway -> Lambda, synchronous) ---
# Lambda's synchronous invocation payload: 6 MB for the request event (and for the response).
LAMBDA_SYNC_PAYLOAD_BYTES = 6 * 1024 * 1024
# The proxy event wraps the body with the headers, path, query and request context: room for them.
PROXY_EVENT_OVERHEAD_BYTES = 256 * 1024
# The largest request body the deployed path carries as text (JSON): the deployed METRO_MAX_REQUEST_BYTES.
DEPLOYED_MAX_REQUEST_BYTES = LAMBDA_SYNC_PAYLOAD_BYTES - PROXY_EVENT_OVERHEAD_BYTES


def carried_request_bytes(limit: int, base64_encoded: bool) -> int:
    """The body size that fits ``limit`` once in the event: API Gateway base64-encodes binary media types
    (application/octet-stream), 4 bytes for every 3."""
    return limit * 3 // 4 if base64_encoded else limit


def check_request_size(size: int, limit: int, base64_encoded: bool = False) -> None:
    """Google's INVALID_ARGUMENT for a request body of ``size`` bytes over ``limit`` (0: no limit)."""
    if not limit:
        return
    allowed = carried_request_bytes(limit, base64_encoded)
    if size > allowed:
        raise InvalidArgument(f"Request payload size exceeds the limit: {allowed} bytes.")
