(function () {
  // The start token is the reader's: typed into the page, kept for this tab (sessionStorage),
  // sent as a bearer token with the CSRF token of the cookie /api/csrf sets. Never in the page.
  var KEY = "freemad-dashboard-token";
  function token() {
    var box = document.getElementById("token");
    if (box && box.value.trim()) {
      sessionStorage.setItem(KEY, box.value.trim());
      box.value = "";
    }
    return sessionStorage.getItem(KEY) || "";
  }
  function root() {  // the way from this page to the server's root: "" or "../"
    return document.getElementById("controls").getAttribute("data-root");
  }
  var said = {};  // each form's last answer, shown again in the fresh copy a live update brings
  function show() {
    var controls = document.getElementById("controls");
    if (controls) controls.hidden = false;
    Object.keys(said).forEach(function (address) {
      var form = document.querySelector('form[data-post="' + address + '"]');
      if (form) say(form, said[address][0], said[address][1]);
    });
    var box = document.getElementById("token");
    if (box && sessionStorage.getItem(KEY)) box.placeholder = "kept for this tab";
  }
  function say(form, text, runId) {
    said[form.getAttribute("data-post")] = [text, runId];
    var out = form.querySelector("output");
    if (!out) return;
    out.textContent = text;
    if (runId) {
      var link = document.createElement("a");
      link.href = root() + "runs/" + encodeURIComponent(runId) + ".html";
      link.textContent = "its page";
      link.className = "started";
      out.appendChild(document.createTextNode(" "));
      out.appendChild(link);
    }
  }
  function override(body, el) {
    // "overrides.deadlines.soft_timeout_ms" into body.overrides.deadlines; empty: the config's.
    var text = el.value.trim();
    if (text === "") return;
    var value = el.type === "number" ? Number(text) : text;
    var list = el.getAttribute("data-list");
    if (list) {
      value = text.split(",").map(function (s) { return s.trim(); }).filter(function (s) { return s !== ""; });
      if (list === "number") value = value.map(Number);
    }
    var path = el.name.split("."), at = body;
    path.slice(0, -1).forEach(function (key) { at = at[key] = at[key] || {}; });
    at[path[path.length - 1]] = value;
  }
  document.addEventListener("submit", function (event) {
    var form = event.target, address = form.getAttribute("data-post");
    if (!address) return;
    event.preventDefault();
    var body = {};
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name) return;
      if (el.name.indexOf("overrides.") === 0) { override(body, el); return; }
      if (el.type === "number") { if (el.value !== "") body[el.name] = Number(el.value); }
      else body[el.name] = el.value;
    });
    var bearer = token();
    if (!bearer) { say(form, "Paste the server's start token first."); return; }
    var asks = form.getAttribute("data-confirm");
    if (asks && !window.confirm(asks)) return;
    say(form, "Sending…");
    fetch(root() + "api/csrf", {cache: "no-store", credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (got) {
        return fetch(address, {
          method: "POST", credentials: "same-origin", cache: "no-store",
          headers: {"Content-Type": "application/json", "Authorization": "Bearer " + bearer,
                    "X-CSRF-Token": got.csrf},
          body: JSON.stringify(body)
        });
      })
      .then(function (r) { return r.json().then(function (b) { return [r.status, b]; }); })
      .then(function (answer) {
        var status = answer[0], b = answer[1];
        if (status === 401) sessionStorage.removeItem(KEY);
        if (status >= 400) { say(form, "Refused (" + status + "): " + (b.error || "")); return; }
        if (status === 202 && form.classList.contains("start") && !b.run_id) say(form, "Started: it is still being checked; it appears in the list once it begins.");
        else if (status === 202 && form.classList.contains("start")) say(form, "Started (" + b.run_id + "):", b.run_id);
        else if (status === 202) say(form, "Done: the agents carry on (" + b.started + ").");
        else say(form, "Done: " + b.done + ".");
        var then = form.getAttribute("data-then");
        if (status === 200 && then) window.location.href = root() + then;
      })
      .catch(function (e) { say(form, "Failed: " + e); });
  });
  show();
  document.addEventListener("freemad:refreshed", show);
})();
