"""The gRPC edge as a long-running process: the entry point of the container image that the opt-in gRPC stack runs
on ECS Fargate behind a load balancer (Dockerfile, infra/grpc_stack.py)."""
