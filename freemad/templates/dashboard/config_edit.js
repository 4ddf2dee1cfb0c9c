(function () {
  // The config editor: every call is a POST with the start token (the reader's, kept for this
  // tab) and the CSRF token of the cookie /api/csrf sets, as the start forms send.
  var KEY = "freemad-dashboard-token";
  var editor = document.getElementById("editor");
  if (!editor) return;
  var root = editor.getAttribute("data-root");
  var base = null, checked = null;  // the version opened; the text last checked and valid
  function $(id) { return document.getElementById(id); }
  function say(text) { $("said").textContent = text; }
  function token() {
    var box = $("token");
    if (box.value.trim()) { sessionStorage.setItem(KEY, box.value.trim()); box.value = ""; }
    if (sessionStorage.getItem(KEY)) box.placeholder = "kept for this tab";
    return sessionStorage.getItem(KEY) || "";
  }
  function post(verb, body) {
    var bearer = token();
    if (!bearer) return Promise.reject(new Error("Paste the server's start token first."));
    body.config = $("config-name").value;
    return fetch(root + "api/csrf", {cache: "no-store", credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (got) {
        return fetch(root + "api/config/" + verb, {
          method: "POST", credentials: "same-origin", cache: "no-store",
          headers: {"Content-Type": "application/json", "Authorization": "Bearer " + bearer,
                    "X-CSRF-Token": got.csrf},
          body: JSON.stringify(body)
        });
      })
      .then(function (r) { return r.json().then(function (b) { return [r.status, b]; }); })
      .then(function (answer) {
        if (answer[0] === 401) sessionStorage.removeItem(KEY);
        return answer;
      });
  }
  function clear() {
    $("problems").hidden = true; $("problems").textContent = "";
    $("diff").hidden = true; $("diff").textContent = "";
  }
  function showProblems(problems) {
    // The text line by line, each problem right after the line it is on.
    var list = $("problems"), lines = $("text").value.split("\n");
    list.textContent = "";
    var at = {}, loose = [];
    problems.forEach(function (p) { if (p.line) (at[p.line] = at[p.line] || []).push(p.message); else loose.push(p.message); });
    lines.forEach(function (line, i) {
      var item = document.createElement("li"), code = document.createElement("code");
      code.textContent = line;
      item.appendChild(code);
      (at[i + 1] || []).forEach(function (message) {
        var note = document.createElement("strong");
        note.className = "problem";
        note.textContent = " ← " + message;
        item.className = "bad";
        item.appendChild(note);
      });
      list.appendChild(item);
    });
    loose.forEach(function (message) {
      var item = document.createElement("li");
      item.className = "bad"; item.textContent = message;
      list.appendChild(item);
    });
    list.hidden = false;
  }
  function showKept(kept) {
    var list = $("kept");
    list.textContent = "";
    if (!kept.length) { list.innerHTML = "<li>None yet: each save keeps the version it replaces.</li>"; return; }
    kept.forEach(function (k) {
      var item = document.createElement("li"), button = document.createElement("button");
      item.appendChild(document.createTextNode(new Date(k.saved_at * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC (" + k.version.slice(0, 12) + ") "));
      button.type = "button"; button.textContent = "Roll back to this"; button.className = "rollback";
      button.setAttribute("data-kept", k.name);
      item.appendChild(button);
      list.appendChild(item);
    });
  }
  function open() {
    clear(); say("Opening…");
    return post("source", {}).then(function (a) {
      if (a[0] !== 200) { say("Refused (" + a[0] + "): " + (a[1].error || "")); return; }
      $("text").value = a[1].text; $("text").disabled = false;
      base = a[1].version; checked = null;
      $("check").disabled = false; $("save").disabled = true;
      showKept(a[1].kept);
      say("Opened " + a[1].config + " (version " + base.slice(0, 12) + ").");
    }).catch(function (e) { say(e.message || String(e)); });
  }
  $("open").addEventListener("click", open);
  $("text").addEventListener("input", function () { checked = null; $("save").disabled = true; });
  $("check").addEventListener("click", function () {
    clear(); say("Checking…");
    var text = $("text").value;
    post("check", {text: text}).then(function (a) {
      if (a[0] !== 200) { say("Refused (" + a[0] + "): " + (a[1].error || "")); return; }
      if (!a[1].ok) { say("Not valid: " + a[1].error); showProblems(a[1].problems); return; }
      checked = text;
      $("diff").textContent = a[1].diff || "(no changes)"; $("diff").hidden = false;
      $("save").disabled = !a[1].diff;
      say("Valid." + (a[1].warnings.length ? " " + a[1].warnings.join(" ") : "") + (a[1].diff ? " The changes are below; Save writes them." : " Nothing to save."));
    }).catch(function (e) { say(e.message || String(e)); });
  });
  $("save").addEventListener("click", function () {
    if (checked === null || checked !== $("text").value) { say("Check the text first."); return; }
    say("Saving…");
    post("save", {text: checked, base: base}).then(function (a) {
      if (a[0] === 200) { return open().then(function () { say("Saved: " + a[1].done + "."); }); }
      if (a[1].problems) showProblems(a[1].problems);
      say("Refused (" + a[0] + "): " + (a[1].error || ""));
    }).catch(function (e) { say(e.message || String(e)); });
  });
  $("kept").addEventListener("click", function (event) {
    var kept = event.target.getAttribute && event.target.getAttribute("data-kept");
    if (!kept || base === null) return;
    if (!window.confirm("Replace the config with this earlier version? The current one is kept.")) return;
    say("Rolling back…");
    post("rollback", {kept: kept, base: base}).then(function (a) {
      if (a[0] === 200) { return open().then(function () { say("Done: " + a[1].done + "."); }); }
      if (a[1].problems) showProblems(a[1].problems);
      say("Refused (" + a[0] + "): " + (a[1].error || ""));
    }).catch(function (e) { say(e.message || String(e)); });
  });
  token();
})();
