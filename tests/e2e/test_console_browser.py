"""The web console (`/console`, chalicelib/api/console/, docs/console.md) in a real headless Chromium against the
real local stack: publish through the page and receive with google-cloud-pubsub, publish with the library and
see the message through the page's peek and pull + ack (and nack), seek to a time and to a snapshot made in the
page, schema revisions and the validate box, and keys mode: the page asks for a token, shows the 401 of a wrong
one, and never puts the token in a URL.

Skipped only when /usr/bin/chromium or /usr/bin/chromedriver is missing. With METRO_CONSOLE_SCREENSHOTS=1 the
run also writes docs/console/*.png."""

from __future__ import annotations

import datetime
import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.e2e.console_page import Console, chromium
from tests.e2e.polling import pull_until
from tests.stack import RunningStack, keys_mode_stack

pytestmark = pytest.mark.e2e

PROJECT = "console-e2e"
ASSETS = {"/console": "text/html", "/console/app.js": "text/javascript", "/console/app.css": "text/css"}


@pytest.fixture(scope="module")
def driver() -> Iterator[webdriver.Chrome]:
    with chromium() as browser:
        yield browser


@pytest.fixture
def console(driver: webdriver.Chrome, stack: RunningStack) -> Iterator[Console]:
    driver.get(f"{stack.url}/console")
    driver.execute_script("sessionStorage.clear()")
    page = Console(driver, stack.url).open()
    page.open_project(PROJECT)
    yield page
    assert page.csp_violations() == []


def _names(unique: str) -> tuple[str, str]:
    return f"projects/{PROJECT}/topics/t-{unique}", f"projects/{PROJECT}/subscriptions/s-{unique}"


def _pull(subscriber: Any, sub: str) -> list[Any]:
    return list(subscriber.pull(subscription=sub, max_messages=10, return_immediately=True).received_messages)


def test_the_console_is_public_and_allows_only_its_own_origin(stack: RunningStack) -> None:
    for path, media in ASSETS.items():
        resp = requests.get(stack.url + path, timeout=10)
        assert resp.status_code == 200 and resp.headers["Content-Type"].startswith(media), (path, resp.headers)
        csp = resp.headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "'unsafe-inline'" not in csp
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        assert "http://" not in resp.text and "https://" not in resp.text, f"{path} names an external source"
    page = requests.get(f"{stack.url}/console", timeout=10).text
    assert 'src="console/app.js"' in page and "<script>" not in page and "<style" not in page
    assert 'src="app.js"' in requests.get(f"{stack.url}/console/", timeout=10).text  # relative to /console/
    script = requests.get(f"{stack.url}/console/app.js", timeout=10).text
    for unsafe in (".innerHTML", ".outerHTML", "insertAdjacentHTML", "document.write", "localStorage.", "eval("):
        assert unsafe not in script, f"the console's script uses {unsafe}"


def test_publish_through_the_page_reaches_a_library_subscriber(console: Console, publisher: Any, subscriber: Any,
                                                               unique: str) -> None:
    topic, sub = _names(unique)
    publisher.create_topic(name=topic)
    subscriber.create_subscription(request={"name": sub, "topic": topic, "enable_message_ordering": True})
    console.refresh()
    console.tab("topics")
    console.row("topics-table", "data-topic", f"t-{unique}")
    console.choose("publish-topic", topic)
    console.type("publish-data", "hello from the console <b>&</b> ✓")
    rows = console.driver.find_elements(By.CSS_SELECTOR, "#publish-attrs .attr-row")
    rows[0].find_element(By.CSS_SELECTOR, ".attr-key").send_keys("origin")
    rows[0].find_element(By.CSS_SELECTOR, ".attr-value").send_keys("console")
    console.click("add-attr")
    second = console.driver.find_elements(By.CSS_SELECTOR, "#publish-attrs .attr-row")[1]
    second.find_element(By.CSS_SELECTOR, ".attr-key").send_keys("kind")
    second.find_element(By.CSS_SELECTOR, ".attr-value").send_keys("<script>alert(1)</script>")
    console.type("publish-ordering", "customer-7")
    console.click("publish")
    shown = console.wait_text("published", "message id")
    console.no_error()
    console.shot("publish")

    got = pull_until(lambda: _pull(subscriber, sub), 1)
    assert len(got) == 1
    message = got[0].message
    assert message.data.decode() == "hello from the console <b>&</b> ✓"
    assert dict(message.attributes) == {"origin": "console", "kind": "<script>alert(1)</script>"}
    assert message.ordering_key == "customer-7"
    assert message.message_id in shown
    subscriber.acknowledge(subscription=sub, ack_ids=[got[0].ack_id])


def test_a_library_publish_is_seen_by_peek_then_pull_nack_and_ack(console: Console, publisher: Any,
                                                                  subscriber: Any, unique: str) -> None:
    topic, sub = _names(unique)
    dead_letters = f"{topic}-dead"
    publisher.create_topic(name=topic)
    publisher.create_topic(name=dead_letters)
    subscriber.create_subscription(request={"name": sub, "topic": topic, "dead_letter_policy": {
        "dead_letter_topic": dead_letters, "max_delivery_attempts": 9}})
    message_id = publisher.publish(topic, b"<i>from the library</i>", source="python").result()
    console.refresh()
    console.tab("subscriptions")  # selenium reads the text of what is shown only
    row = f'#subs-table tr[data-subscription="s-{unique}"]'
    console.until(lambda: console.driver.find_element(By.CSS_SELECTOR, f"{row} .backlog").text == "1",
                  "a backlog of 1")
    cells = [c.text for c in console.driver.find_elements(By.CSS_SELECTOR, f"{row} td")]
    assert cells[4:6] == [f"t-{unique}-dead after 9 attempts", "pull"], cells
    console.shot("subscriptions")
    console.open_subscription(f"s-{unique}")

    for _ in range(2):  # a peek hands the message back: a second peek sees it again
        peeked = console.messages_after("peek", "Peeked 1")
        assert [(m["id"], m["data"], m["attributes"]) for m in peeked] == [
            (message_id, "<i>from the library</i>", "source=python")]
    console.shot("peek")
    assert console.driver.find_elements(By.CSS_SELECTOR, "#messages-table i") == []  # text, not markup

    assert [m["id"] for m in console.messages_after("pull", "Pulled 1")] == [message_id]
    console.click("nack")
    console.wait_text("messages-note", "Nacked 1")
    assert [m["id"] for m in console.messages_after("pull", "Pulled 1")] == [message_id]  # back after the nack
    console.shot("pull")
    console.click("ack")
    console.wait_text("messages-note", "Acknowledged 1")
    console.no_error()
    assert console.messages_after("peek", "Peeked 0") == []
    assert _pull(subscriber, sub) == []


def test_seek_to_a_time_and_to_a_snapshot_made_in_the_page(console: Console, publisher: Any, subscriber: Any,
                                                           unique: str) -> None:
    topic, sub = _names(unique)
    publisher.create_topic(name=topic)
    subscriber.create_subscription(request={"name": sub, "topic": topic, "retain_acked_messages": True})
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=2)
    message_id = publisher.publish(topic, b"replay me").result()
    got = pull_until(lambda: _pull(subscriber, sub), 1)
    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in got])
    assert _pull(subscriber, sub) == []

    console.refresh()
    console.open_subscription(f"s-{unique}")
    console.type("seek-time", start.isoformat().replace("+00:00", "Z"))
    console.click("seek-time-go")
    console.wait_text("seek-result", f"Sought s-{unique} to")
    console.no_error()
    assert [m["id"] for m in console.messages_after("peek", "Peeked 1")] == [message_id]
    console.shot("seek")

    console.tab("snapshots")
    console.type("snapshot-id", f"snap-{unique}")
    console.choose("snapshot-sub", sub)
    console.click("snapshot-create-go")
    console.wait_text("notice", f"Created snapshot snap-{unique}")
    console.row("snapshots-table", "data-snapshot", f"snap-{unique}")
    console.shot("snapshots")
    got = pull_until(lambda: _pull(subscriber, sub), 1)  # acknowledge it again; the snapshot holds it
    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in got])

    console.open_subscription(f"s-{unique}")
    console.choose("seek-snapshot", f"projects/{PROJECT}/snapshots/snap-{unique}")
    console.click("seek-snapshot-go")
    console.wait_text("seek-result", f"to snapshot snap-{unique}")
    assert [m["id"] for m in console.messages_after("peek", "Peeked 1")] == [message_id]

    console.tab("snapshots")
    console.driver.execute_script("window.confirm = () => true")
    console.row("snapshots-table", "data-snapshot", f"snap-{unique}").find_element(By.CSS_SELECTOR,
                                                                                   "button.delete").click()
    console.wait_text("notice", f"Deleted snapshot snap-{unique}")
    names = [s.name for s in subscriber.list_snapshots(project=f"projects/{PROJECT}")]
    assert f"projects/{PROJECT}/snapshots/snap-{unique}" not in names


def test_schema_revisions_and_the_validate_box(console: Console, stack: RunningStack, unique: str) -> None:
    schema = f"order-{unique}"
    definition = json.dumps({"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}})
    resp = requests.post(f"{stack.url}/v1/projects/{PROJECT}/schemas?schemaId={schema}",
                         json={"type": "JSON_SCHEMA", "definition": definition}, timeout=10)
    assert resp.status_code == 200, resp.text
    console.refresh()
    console.tab("schemas")
    console.row("schemas-table", "data-schema", schema).find_element(By.TAG_NAME, "button").click()
    console.wait_text("revisions-table", '"required": ["id"]')

    console.choose("validate-schema", f"projects/{PROJECT}/schemas/{schema}")
    console.type("validate-message", '{"qty": 2}')
    console.click("validate")
    shown = console.wait_error("400 INVALID_ARGUMENT: Could not parse message")
    assert "'id' is a required property" in shown
    console.shot("schemas-invalid")
    console.type("validate-message", '{"id": "a-1"}')
    console.click("validate")
    console.wait_text("validate-result", "Valid")
    console.no_error()
    console.shot("schemas")


def test_an_api_error_shows_googles_message(console: Console) -> None:
    console.tab("topics")
    console.type("topic-id", "no")  # too short for Google's resource names
    console.click("topic-create-go")
    console.wait_error("400 INVALID_ARGUMENT: Invalid [topics] name")


# -- keys mode --------------------------------------------------------------------------------------------------------
ADMIN_KEY = secrets.token_urlsafe(32)
KEYS_PROJECT = "console-keys"


@pytest.fixture(scope="module")
def keys_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    with keys_mode_stack(tmp_path_factory.mktemp("console-keys"), ADMIN_KEY) as running:
        yield running


def _admin(stack: RunningStack, method: str, path: str, body: Any = None) -> Any:
    resp = requests.request(method, stack.url + path, json=body, headers={"x-api-key": ADMIN_KEY}, timeout=30)
    assert resp.status_code == 200, (method, path, resp.text)
    return resp.json() if resp.content else {}


def _urls(driver: webdriver.Chrome) -> list[str]:
    entries = driver.execute_script("return [...performance.getEntriesByType('navigation'), "
                                    "...performance.getEntriesByType('resource')].map(e => e.name)")
    return [driver.current_url, *entries]


@pytest.fixture(scope="module")
def ops_token(keys_stack: RunningStack) -> str:
    """A project_admin of KEYS_PROJECT, which has a topic "orders"."""
    _admin(keys_stack, "POST", f"/v1/projects/{KEYS_PROJECT}", {"description": "the console's"})
    token: str = _admin(keys_stack, "POST", "/v1/users/console-ops",
                        {"projects": [{"project": KEYS_PROJECT, "roles": ["project_admin"]}],
                         "email": "ops@example.com"})["token"]
    _admin(keys_stack, "PUT", f"/v1/projects/{KEYS_PROJECT}/topics/orders", {})
    return token


def _sign_in_page(driver: webdriver.Chrome, stack: RunningStack) -> Console:
    driver.get(f"{stack.url}/console")
    driver.execute_script("sessionStorage.clear()")
    page = Console(driver, stack.url).open()
    page.until(lambda: page.visible("login") and not page.visible("app"), "the token form")
    page.no_error()
    return page


def _sign_in(page: Console, token: str, who: str) -> None:
    page.type("token", token)
    page.click("sign-in")
    page.wait_text("who", who)


def test_keys_mode_asks_for_a_token_and_never_puts_it_in_a_url(driver: webdriver.Chrome, keys_stack: RunningStack,
                                                                ops_token: str) -> None:
    token = ops_token
    unauthenticated = requests.get(f"{keys_stack.url}/v1/users/profile", headers={"x-api-key": "wrong-" + token},
                                   timeout=10).json()["error"]["message"]
    page = _sign_in_page(driver, keys_stack)
    page.shot("login")
    history = driver.execute_script("return history.length")

    page.type("token", "wrong-" + token)
    page.click("sign-in")
    shown = page.wait_error("401 UNAUTHENTICATED")
    assert unauthenticated in shown
    assert page.visible("login")
    page.shot("login-wrong-token")

    _sign_in(page, token, "signed in as console-ops")
    page.until(lambda: page.visible("tab-topics") or page.visible("tab-subscriptions"), "the project")
    assert page.by_id("project").get_attribute("value") == KEYS_PROJECT  # the user's only project, opened
    page.tab("topics")
    page.row("topics-table", "data-topic", "orders")
    page.no_error()

    seen = _urls(driver)  # every URL the tab loaded or fetched since the page opened, API calls included
    driver.refresh()  # the token survives a reload of the tab (sessionStorage), still out of every URL
    page.wait_text("who", "signed in as console-ops")
    seen += _urls(driver)
    assert any("/topics/orders:metrics" in url for url in seen), seen
    assert all(token not in url for url in seen), seen
    assert all(url.startswith(keys_stack.url) for url in seen), seen  # nothing from elsewhere
    assert driver.current_url == f"{keys_stack.url}/console"
    assert driver.execute_script("return history.length") == history  # signing in added no history entry
    assert token not in driver.page_source
    assert page.csp_violations() == []

    page.click("sign-out")
    page.until(lambda: page.visible("login"), "the token form again")
    assert driver.execute_script("return sessionStorage.getItem('metro.console.token')") is None


def test_keys_mode_users_and_acls(driver: webdriver.Chrome, keys_stack: RunningStack, ops_token: str) -> None:
    page = _sign_in_page(driver, keys_stack)
    _sign_in(page, ops_token, "signed in as console-ops")
    page.tab("access")
    page.row("users-table", "data-user", "console-ops")
    page.choose("acl-resource", f"projects/{KEYS_PROJECT}/topics/orders")
    page.click("acl-load")
    page.wait_text("notice", "Loaded the ACL of orders")  # its answer fills the field: type after it
    page.type("acl-users", "console-ops")
    page.click("acl-save")
    page.wait_text("notice", "Replaced the ACL of orders")
    acl = _admin(keys_stack, "GET", f"/v1/projects/{KEYS_PROJECT}/topics/orders:acl")
    assert acl["authorized_users"] == ["console-ops"]

    _admin(keys_stack, "POST", "/v1/users/console-reader", {"email": "reader@example.com"})
    page.type("member-user", "console-reader")
    page.driver.find_element(By.CSS_SELECTOR, '#member-form .member-role[value="consumer"]').click()
    page.click("member-save")
    page.wait_text("notice", "console-reader now has consumer")
    page.row("users-table", "data-user", "console-reader")
    reader = _admin(keys_stack, "GET", "/v1/users/console-reader")
    assert [(p["project"], p["roles"]) for p in reader["projects"]] == [(KEYS_PROJECT, ["consumer"])]
    page.shot("users")

    page.click("sign-out")
    _sign_in(page, ADMIN_KEY, "service_admin")  # a service admin picks among every project (GET /v1/projects)
    page.until(lambda: KEYS_PROJECT in page.text("projects"), "the projects' list")
    page.no_error()
    assert page.csp_violations() == []
