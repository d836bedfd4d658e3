"""``chalice package`` sees every route of the method registry: app.py registers the route templates in a loop
(api/registry.py's ROUTES), and the packaged API definition must hold each, with the HTTP methods it answers."""

from __future__ import annotations

from chalicelib.api import registry
from tests.package.packaged import packaged_template

_ALL = {"get", "put", "patch", "delete", "post"}


def test_the_packaged_api_has_every_route_of_the_registry() -> None:
    template = packaged_template()
    paths = template["Resources"]["RestAPI"]["Properties"]["DefinitionBody"]["paths"]
    served = {path: {m for m in methods if m in _ALL} for path, methods in paths.items()}
    expected = {route: {"get"} if registry.is_public(route) else _ALL for route in registry.ROUTES}
    assert served == expected
