// Metro's web console (docs/console.md): vanilla JavaScript over Metro's own REST API.
// Every value is rendered with textContent (never innerHTML); the token lives in sessionStorage only and is sent
// as the x-api-key header, never in a URL.
"use strict";

(() => {
  const BASE = location.pathname.replace(/\/console\/?$/, "");  // "" locally, "/api" on a deployed stage
  const TOKEN_KEY = "metro.console.token";
  const PROJECT_KEY = "metro.console.project";
  const TAB_KEY = "metro.console.tab";
  const $ = (id) => document.getElementById(id);
  const state = { keys: false, profile: null, project: "", topics: [], subs: [], snapshots: [], schemas: [],
                  sub: "", pulled: [] };

  // -- DOM helpers: text only -------------------------------------------------------------------------------
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, String(value));
    }
    for (const child of children) {
      node.append(child instanceof Node ? child : document.createTextNode(child === undefined || child === null
        ? "" : String(child)));
    }
    return node;
  }

  function fill(tbody, rows) {
    tbody.replaceChildren(...rows);
  }

  function options(select, values, keep) {
    const before = keep ? select.value : "";
    select.replaceChildren(...values.map((v) => el("option", { value: v }, v)));
    if (values.includes(before)) select.value = before;
  }

  // A later load of a table wins over an earlier one that answers after it.
  const generation = {};
  function ticket(name) {
    generation[name] = (generation[name] || 0) + 1;
    const mine = generation[name];
    return () => generation[name] === mine;
  }

  const short = (name) => String(name || "").split("/").pop();

  // -- errors and notices ---------------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(code, status, message) {
      super(message);
      this.code = code;
      this.status = status;
    }
  }

  function showError(err) {
    const box = $("error");
    const text = err instanceof ApiError
      ? `${err.code ? err.code + " " : ""}${err.status ? err.status + ": " : ""}${err.message}`
      : String(err && err.message ? err.message : err);
    box.textContent = text;
    box.hidden = false;
  }

  function clearMessages() {
    $("error").hidden = true;
    $("error").textContent = "";
    $("notice").hidden = true;
  }

  function notice(text) {
    $("notice").textContent = text;
    $("notice").hidden = false;
  }

  // An action of the page: its errors are shown, never thrown away.
  function act(fn) {
    return async (event) => {
      if (event && event.preventDefault) event.preventDefault();
      clearMessages();
      try {
        await fn(event);
      } catch (err) {
        showError(err);
      }
    };
  }

  // -- the API ---------------------------------------------------------------------------------------------------
  async function api(method, path, body) {
    const headers = { "Accept": "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers["x-api-key"] = token;
    const init = { method, headers, credentials: "omit", cache: "no-store", referrerPolicy: "no-referrer" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(BASE + path, init);
    } catch (err) {
      throw new ApiError(0, "UNAVAILABLE", `Metro did not answer (${err.message})`);
    }
    const text = await resp.text();
    let data = {};
    try {
      data = text ? JSON.parse(text) : {};
    } catch (_) {
      data = {};
    }
    if (!resp.ok) {
      const envelope = (data && data.error) || {};
      throw new ApiError(envelope.code || resp.status, envelope.status || "", envelope.message || text
        || resp.statusText);
    }
    return data;
  }

  const enc = encodeURIComponent;
  const projectPath = () => `/v1/projects/${enc(state.project)}`;
  const topicPath = (t) => `${projectPath()}/topics/${enc(short(t))}`;
  const subPath = (s) => `${projectPath()}/subscriptions/${enc(short(s))}`;

  // base64 <-> UTF-8 text
  function toBase64(text) {
    const bytes = new TextEncoder().encode(text);
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(binary);
  }

  function fromBase64(data) {
    if (!data) return "";
    try {
      const binary = atob(data);
      const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch (_) {
      return `base64: ${data}`;
    }
  }

  function metric(answer, name) {
    const found = ((answer && answer.metrics) || []).find((m) => m.metric === name);
    const series = found ? found.timeseries || [] : [];
    return series.length ? series[series.length - 1].value : null;
  }

  function age(seconds) {
    if (seconds === null || seconds === undefined) return "—";
    const s = Number(seconds);
    if (s < 120) return `${s} s`;
    if (s < 7200) return `${Math.round(s / 60)} min`;
    return `${(s / 3600).toFixed(1)} h`;
  }

  async function all(path, key) {
    const out = [];
    let token = "";
    for (let page = 0; page < 20; page += 1) {
      const sep = path.includes("?") ? "&" : "?";
      const answer = await api("GET", `${path}${sep}pageSize=100${token ? "&pageToken=" + enc(token) : ""}`);
      out.push(...(answer[key] || []));
      token = answer.nextPageToken || "";
      if (!token) break;
    }
    return out;
  }

  // -- sign in, who, projects ---------------------------------------------------------------------------------------
  async function start() {
    try {
      state.profile = await api("GET", "/v1/users/profile");
    } catch (err) {
      if (err.code === 401) {
        state.keys = true;
        const hadToken = Boolean(sessionStorage.getItem(TOKEN_KEY));
        sessionStorage.removeItem(TOKEN_KEY);
        showLogin();
        if (hadToken) showError(err);
        return;
      }
      throw err;
    }
    state.keys = Boolean(sessionStorage.getItem(TOKEN_KEY)) || state.profile.name !== "anonymous";
    await showApp();
  }

  function showLogin() {
    $("login").hidden = false;
    $("app").hidden = true;
    $("sign-out").hidden = true;
    $("who").textContent = "";
    $("token").value = "";
    $("token").focus();
  }

  async function signIn() {
    const token = $("token").value.trim();
    $("token").value = "";
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    try {
      state.profile = await api("GET", "/v1/users/profile");
    } catch (err) {
      sessionStorage.removeItem(TOKEN_KEY);
      throw err;
    }
    state.keys = true;
    await showApp();
  }

  function signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
    state.profile = null;
    $("tabs").hidden = true;
    for (const tab of document.querySelectorAll(".tab")) tab.hidden = true;
    showLogin();
  }

  const serviceAdmin = () => ((state.profile && state.profile.service_roles) || []).includes("service_admin");

  async function showApp() {
    const p = state.profile || {};
    const roles = serviceAdmin() ? "service_admin"
      : (p.projects || []).map((x) => `${x.project}: ${(x.roles || []).join(", ")}`).join("; ");
    $("who").textContent = state.keys ? `signed in as ${p.name} (${roles || "no roles"})` : "open mode (no token)";
    $("login").hidden = true;
    $("app").hidden = false;
    $("sign-out").hidden = !state.keys;
    $("access-tab").hidden = !state.keys;
    let names = (p.projects || []).map((x) => x.project);
    if (state.keys && serviceAdmin()) {
      try {
        names = (await api("GET", "/v1/projects")).projects.map((x) => x.name);
      } catch (err) {
        showError(err);
      }
    }
    options($("project-list"), names);
    $("projects").replaceChildren(...names.map((n) => el("button", { type: "button", onclick: act(() => openProject(n)) },
      n)));
    const last = sessionStorage.getItem(PROJECT_KEY) || (names.length === 1 ? names[0] : "");
    if (last) await openProject(last);
  }

  async function openProject(name) {
    state.project = name.trim();
    if (!state.project) return;
    $("project").value = state.project;
    sessionStorage.setItem(PROJECT_KEY, state.project);
    state.sub = "";
    $("sub-panel").hidden = true;
    $("revisions").hidden = true;
    $("tabs").hidden = false;
    selectTab(sessionStorage.getItem(TAB_KEY) || "topics");
    await refresh();
  }

  function selectTab(name) {
    if (name === "access" && !state.keys) name = "topics";
    sessionStorage.setItem(TAB_KEY, name);
    for (const button of document.querySelectorAll("#tabs button[data-tab]")) {
      button.classList.toggle("active", button.dataset.tab === name);
    }
    for (const tab of document.querySelectorAll(".tab")) tab.hidden = tab.id !== `tab-${name}`;
  }

  async function refresh() {
    const loads = [loadTopics(), loadSubscriptions(), loadSnapshots(), loadSchemas()];
    if (state.keys) loads.push(loadUsers());
    const results = await Promise.allSettled(loads);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) showError(failed.reason);
  }

  // -- topics and publish ---------------------------------------------------------------------------------------------
  async function loadTopics() {
    const current = ticket("topics");
    const topics = (await all(`${projectPath()}/topics`, "topics")).map((t) => t.name);
    const rows = await Promise.all(topics.map(async (name) => {
      let metrics = null;
      try {
        metrics = await api("GET", `${topicPath(name)}:metrics`);
      } catch (_) {
        metrics = null;  // a publisher may read the topic and not its metrics: the row shows dashes
      }
      const rate = metric(metrics, "topic.publishing_rate");
      return el("tr", { "data-topic": short(name) },
        el("td", { class: "mono" }, short(name)),
        el("td", { class: "num rate" }, rate === null ? "—" : Number(rate).toFixed(2)),
        el("td", { class: "num" }, metric(metrics, "topic.number_of_published_messages") ?? "—"),
        el("td", { class: "num" }, metric(metrics, "topic.number_of_subscriptions") ?? "—"),
        el("td", {},
          el("button", { type: "button", onclick: () => { $("publish-topic").value = name; $("publish-data").focus(); } },
            "Publish…"),
          " ",
          el("button", { type: "button", class: "delete", onclick: act(async () => {
            if (!confirm(`Delete topic ${short(name)}?`)) return;
            await api("DELETE", topicPath(name));
            notice(`Deleted topic ${short(name)}`);
            await refresh();
          }) }, "Delete")));
    }));
    if (!current()) return;
    state.topics = topics;
    fill($("topics-table").tBodies[0], rows);
    options($("publish-topic"), state.topics, true);
    options($("sub-topic"), state.topics, true);
    optionsForAcl();
  }

  function attrRow(key, value) {
    const row = el("div", { class: "attr-row" },
      el("input", { class: "attr-key", placeholder: "key", spellcheck: "false", value: key || "" }),
      el("input", { class: "attr-value", placeholder: "value", spellcheck: "false", value: value || "" }));
    row.append(el("button", { type: "button", onclick: () => row.remove() }, "Remove"));
    $("publish-attrs").append(row);
  }

  async function publish() {
    const topic = $("publish-topic").value;
    if (!topic) throw new Error("Choose a topic first.");
    const message = { data: toBase64($("publish-data").value) };
    const attributes = {};
    for (const row of document.querySelectorAll("#publish-attrs .attr-row")) {
      const key = row.querySelector(".attr-key").value;
      if (key) attributes[key] = row.querySelector(".attr-value").value;
    }
    if (Object.keys(attributes).length) message.attributes = attributes;
    const ordering = $("publish-ordering").value;
    if (ordering) message.orderingKey = ordering;
    const answer = await api("POST", `${topicPath(topic)}:publish`, { messages: [message] });
    $("published").textContent = `Published to ${short(topic)}: message id ${(answer.messageIds || []).join(", ")}`;
  }

  // -- subscriptions, messages, seek ----------------------------------------------------------------------------------
  function delivery(sub) {
    const push = sub.pushConfig || {};
    if (push.pushEndpoint) return `push to ${push.pushEndpoint}`;
    if (sub.bigqueryConfig && Object.keys(sub.bigqueryConfig).length) return "BigQuery";
    if (sub.cloudStorageConfig && Object.keys(sub.cloudStorageConfig).length) return "Cloud Storage";
    return "pull";
  }

  function deadLetter(sub) {
    const policy = sub.deadLetterPolicy;
    if (!policy || !policy.deadLetterTopic) return "—";
    return `${short(policy.deadLetterTopic)} after ${policy.maxDeliveryAttempts || 5} attempts`;
  }

  async function loadSubscriptions() {
    const current = ticket("subscriptions");
    const subs = await all(`${projectPath()}/subscriptions`, "subscriptions");
    const rows = await Promise.all(subs.map(async (sub) => {
      let metrics = null;
      try {
        metrics = await api("GET", `${subPath(sub.name)}:metrics`);
      } catch (_) {
        metrics = null;
      }
      return el("tr", { "data-subscription": short(sub.name) },
        el("td", { class: "mono" }, short(sub.name)),
        el("td", { class: "mono" }, sub.topic === "_deleted-topic_" ? "(deleted topic)" : short(sub.topic)),
        el("td", { class: "num backlog" }, metric(metrics, "subscription.number_of_undelivered_messages") ?? "—"),
        el("td", { class: "num" }, age(metric(metrics, "subscription.oldest_unacked_message_age"))),
        el("td", {}, deadLetter(sub)),
        el("td", {}, delivery(sub)),
        el("td", {},
          el("button", { type: "button", class: "open", onclick: act(() => openSubscription(sub.name)) }, "Messages…"),
          " ",
          el("button", { type: "button", class: "delete", onclick: act(async () => {
            if (!confirm(`Delete subscription ${short(sub.name)}?`)) return;
            await api("DELETE", subPath(sub.name));
            notice(`Deleted subscription ${short(sub.name)}`);
            await refresh();
          }) }, "Delete")));
    }));
    if (!current()) return;
    state.subs = subs;
    fill($("subs-table").tBodies[0], rows);
    options($("snapshot-sub"), state.subs.map((s) => s.name), true);
    optionsForAcl();
  }

  function openSubscription(name) {
    state.sub = name;
    state.pulled = [];
    $("sub-name").textContent = short(name);
    $("sub-panel").hidden = false;
    $("messages-note").textContent = "";
    $("seek-result").textContent = "";
    fill($("messages-table").tBodies[0], []);
    $("sub-panel").scrollIntoView();
  }

  function showMessages(received, note) {
    state.pulled = received;
    $("messages-note").textContent = note;
    fill($("messages-table").tBodies[0], received.map((r) => {
      const m = r.message || {};
      const attrs = Object.entries(m.attributes || {}).map(([k, v]) => `${k}=${v}`).join(", ");
      return el("tr", { "data-message-id": m.messageId },
        el("td", {}, el("input", { type: "checkbox", class: "pick", checked: r.ackId ? "checked" : false,
                                   disabled: r.ackId ? false : "disabled" })),
        el("td", { class: "mono" }, m.messageId),
        el("td", {}, m.publishTime),
        el("td", { class: "data" }, el("pre", {}, fromBase64(m.data))),
        el("td", { class: "attrs" }, attrs),
        el("td", {}, m.orderingKey || ""),
        el("td", { class: "num" }, r.deliveryAttempt || ""));
    }));
  }

  async function pullMessages() {
    const max = Math.max(1, Math.min(1000, Number($("max-messages").value) || 10));
    const answer = await api("POST", `${subPath(state.sub)}:pull`, { maxMessages: max, returnImmediately: true });
    return answer.receivedMessages || [];
  }

  async function peek() {
    const received = await pullMessages();
    const ackIds = received.map((r) => r.ackId);
    if (ackIds.length) await api("POST", `${subPath(state.sub)}:modifyAckDeadline`, { ackIds, ackDeadlineSeconds: 0 });
    showMessages(received.map((r) => ({ ...r, ackId: "" })),
      `Peeked ${received.length} message(s): handed back at once (their delivery attempt counts).`);
  }

  async function pull() {
    const received = await pullMessages();
    showMessages(received, `Pulled ${received.length} message(s): acknowledge them, or nack to hand them back.`);
  }

  function picked() {
    const ids = [];
    const rows = $("messages-table").tBodies[0].rows;
    for (let i = 0; i < rows.length; i += 1) {
      const box = rows[i].querySelector("input.pick");
      if (box && box.checked && state.pulled[i] && state.pulled[i].ackId) ids.push(state.pulled[i].ackId);
    }
    return ids;
  }

  async function settle(nack) {
    const ackIds = picked();
    if (!ackIds.length) throw new Error("Select pulled messages first (peeked ones are already back).");
    if (nack) await api("POST", `${subPath(state.sub)}:modifyAckDeadline`, { ackIds, ackDeadlineSeconds: 0 });
    else await api("POST", `${subPath(state.sub)}:acknowledge`, { ackIds });
    showMessages([], `${nack ? "Nacked" : "Acknowledged"} ${ackIds.length} message(s).`);
    await loadSubscriptions();
  }

  async function seekTime() {
    const text = $("seek-time").value.trim();
    const when = new Date(text);
    if (!text || Number.isNaN(when.getTime())) throw new Error(`Not a time: ${text}`);
    await api("POST", `${subPath(state.sub)}:seek`, { time: when.toISOString() });
    $("seek-result").textContent = `Sought ${short(state.sub)} to ${when.toISOString()}.`;
    await loadSubscriptions();
  }

  async function seekSnapshot() {
    const snapshot = $("seek-snapshot").value;
    if (!snapshot) throw new Error("No snapshot to seek to.");
    await api("POST", `${subPath(state.sub)}:seek`, { snapshot });
    $("seek-result").textContent = `Sought ${short(state.sub)} to snapshot ${short(snapshot)}.`;
    await loadSubscriptions();
  }

  // -- snapshots ------------------------------------------------------------------------------------------------------
  async function loadSnapshots() {
    const current = ticket("snapshots");
    const snapshots = await all(`${projectPath()}/snapshots`, "snapshots");
    if (!current()) return;
    state.snapshots = snapshots;
    fill($("snapshots-table").tBodies[0], state.snapshots.map((s) => el("tr", { "data-snapshot": short(s.name) },
      el("td", { class: "mono" }, short(s.name)),
      el("td", { class: "mono" }, short(s.topic)),
      el("td", {}, s.expireTime || ""),
      el("td", {}, el("button", { type: "button", class: "delete", onclick: act(async () => {
        if (!confirm(`Delete snapshot ${short(s.name)}?`)) return;
        await api("DELETE", `${projectPath()}/snapshots/${enc(short(s.name))}`);
        notice(`Deleted snapshot ${short(s.name)}`);
        await loadSnapshots();
      }) }, "Delete")))));
    options($("seek-snapshot"), state.snapshots.map((s) => s.name), true);
  }

  async function createSnapshot() {
    const id = $("snapshot-id").value.trim();
    const subscription = $("snapshot-sub").value;
    await api("PUT", `${projectPath()}/snapshots/${enc(id)}`, { subscription });
    $("snapshot-id").value = "";
    notice(`Created snapshot ${id} of ${short(subscription)}`);
    await loadSnapshots();
  }

  // -- schemas --------------------------------------------------------------------------------------------------------
  async function loadSchemas() {
    const current = ticket("schemas");
    const schemas = await all(`${projectPath()}/schemas`, "schemas");
    if (!current()) return;
    state.schemas = schemas;
    fill($("schemas-table").tBodies[0], state.schemas.map((s) => el("tr", { "data-schema": short(s.name) },
      el("td", { class: "mono" }, short(s.name)),
      el("td", {}, s.type),
      el("td", { class: "mono" }, s.revisionId),
      el("td", {}, s.revisionCreateTime),
      el("td", {}, el("button", { type: "button", onclick: act(() => showRevisions(s.name)) }, "Revisions…")))));
    options($("validate-schema"), state.schemas.map((s) => s.name), true);
  }

  async function showRevisions(name) {
    const revisions = await all(`${projectPath()}/schemas/${enc(short(name))}:listRevisions?view=FULL`, "schemas");
    $("revisions-name").textContent = short(name);
    fill($("revisions-table").tBodies[0], revisions.map((r) => el("tr", {},
      el("td", { class: "mono" }, r.revisionId),
      el("td", {}, r.revisionCreateTime),
      el("td", {}, el("pre", {}, r.definition)))));
    $("revisions").hidden = false;
  }

  async function validate() {
    const result = $("validate-result");
    result.textContent = "";
    result.className = "";
    const encoding = $("validate-encoding").value;
    const text = $("validate-message").value;
    const message = encoding === "BINARY" ? text.trim() : toBase64(text);
    await api("POST", `${projectPath()}/schemas:validateMessage`,
      { name: $("validate-schema").value, message, encoding });
    result.textContent = "Valid: the schema accepts this message.";
    result.className = "ok";
  }

  // -- users and ACLs (keys mode) -------------------------------------------------------------------------------------
  async function loadUsers() {
    const current = ticket("users");
    let users = [];
    try {
      users = serviceAdmin() ? await all("/v1/users", "users") : await all(`${projectPath()}/members`, "users");
    } catch (err) {
      if (err.code === 403) {
        fill($("users-table").tBodies[0], [el("tr", {}, el("td", { colspan: 5 }, "Only project admins see users."))]);
        return;
      }
      throw err;
    }
    if (!current()) return;
    fill($("users-table").tBodies[0], users.map((u) => {
      const here = (u.projects || []).find((p) => p.project === state.project);
      return el("tr", { "data-user": u.name },
        el("td", { class: "mono" }, u.name),
        el("td", {}, u.email || ""),
        el("td", {}, here ? (here.roles || []).join(", ") : "—"),
        el("td", {}, (u.service_roles || []).join(", ")),
        el("td", {}, here ? el("button", { type: "button", class: "remove", onclick: act(async () => {
          if (!confirm(`Remove ${u.name} from ${state.project}?`)) return;
          await api("POST", `${projectPath()}/members/${enc(u.name)}:remove`, {});
          notice(`Removed ${u.name} from ${state.project}`);
          await loadUsers();
        }) }, "Remove from project") : ""));
    }));
  }

  // An existing user's roles in this project (AMS's members/{user}:add, which also adds a user not yet a member).
  async function setMemberRoles() {
    const user = $("member-user").value.trim();
    const roles = [...document.querySelectorAll("#member-form .member-role")].filter((b) => b.checked)
      .map((b) => b.value);
    await api("POST", `${projectPath()}/members/${enc(user)}:add`, { roles });
    notice(`${user} now has ${roles.join(", ") || "no roles"} in ${state.project}`);
    await loadUsers();
  }

  function optionsForAcl() {
    const values = [...state.topics, ...state.subs.map((s) => s.name)];
    options($("acl-resource"), values, true);
  }

  function aclPath() {
    const name = $("acl-resource").value;
    if (!name) throw new Error("Choose a topic or subscription.");
    return name.includes("/subscriptions/") ? subPath(name) : topicPath(name);
  }

  async function loadAcl() {
    const answer = await api("GET", `${aclPath()}:acl`);
    $("acl-users").value = (answer.authorized_users || []).join(", ");
    notice(`Loaded the ACL of ${short($("acl-resource").value)}`);
  }

  async function saveAcl() {
    const users = $("acl-users").value.split(",").map((u) => u.trim()).filter(Boolean);
    await api("POST", `${aclPath()}:modifyAcl`, { authorized_users: users });
    notice(`Replaced the ACL of ${short($("acl-resource").value)}`);
  }

  // -- wiring ---------------------------------------------------------------------------------------------------------
  $("login-form").addEventListener("submit", act(signIn));
  $("sign-out").addEventListener("click", act(signOut));
  $("project-form").addEventListener("submit", act(() => openProject($("project").value)));
  for (const button of document.querySelectorAll("#tabs button[data-tab]")) {
    button.addEventListener("click", () => selectTab(button.dataset.tab));
  }
  $("refresh").addEventListener("click", act(refresh));
  $("topic-create").addEventListener("submit", act(async () => {
    const id = $("topic-id").value.trim();
    await api("PUT", `${projectPath()}/topics/${enc(id)}`, {});
    $("topic-id").value = "";
    notice(`Created topic ${id}`);
    await loadTopics();
  }));
  $("add-attr").addEventListener("click", () => attrRow());
  $("publish-form").addEventListener("submit", act(publish));
  $("sub-create").addEventListener("submit", act(async () => {
    const id = $("sub-id").value.trim();
    await api("PUT", `${projectPath()}/subscriptions/${enc(id)}`, { topic: $("sub-topic").value });
    $("sub-id").value = "";
    notice(`Created subscription ${id}`);
    await loadSubscriptions();
  }));
  $("peek").addEventListener("click", act(peek));
  $("pull").addEventListener("click", act(pull));
  $("ack").addEventListener("click", act(() => settle(false)));
  $("nack").addEventListener("click", act(() => settle(true)));
  $("seek-time-form").addEventListener("submit", act(seekTime));
  $("seek-snapshot-form").addEventListener("submit", act(seekSnapshot));
  $("snapshot-create").addEventListener("submit", act(createSnapshot));
  $("validate-form").addEventListener("submit", act(validate));
  $("acl-load").addEventListener("click", act(loadAcl));
  $("acl-form").addEventListener("submit", act(saveAcl));
  $("member-form").addEventListener("submit", act(setMemberRoles));
  attrRow();
  act(start)();
})();
