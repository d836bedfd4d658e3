"""Wiring: the use cases built once per warm Lambda (or per local server) from configuration."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from chalicelib import config
from chalicelib.service.admin import AdminService
from chalicelib.service.context import Context
from chalicelib.service.publish import PublishService
from chalicelib.service.pull import PullService
from chalicelib.service.usage import UsageService


@dataclass(frozen=True)
class Services:
    ctx: Context
    admin: AdminService
    publish: PublishService
    pull: PullService
    usage: UsageService

    @classmethod
    def build(cls, ctx: Context) -> Services:
        return cls(ctx, AdminService(ctx), PublishService(ctx), PullService(ctx), UsageService(ctx))


@functools.lru_cache(maxsize=1)
def services() -> Services:
    return Services.build(Context.from_config(config.load()))


def reset() -> None:
    services.cache_clear()
