(function () {
  var runId = document.body.getAttribute("data-run-id") || "";
  var note = document.getElementById("live");
  var seen = new Set(), timer = null;
  function refresh() {
    timer = null;
    fetch(window.location.href, {headers: {"Accept": "text/html"}, cache: "no-store"})
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var main = document.querySelector("main");
        if (fresh && main) main.replaceWith(fresh);
        note = document.getElementById("live");
        if (note) note.textContent = "Live: updated " + new Date().toLocaleTimeString();
      });
  }
  var source = new EventSource(document.body.getAttribute("data-events"));
  source.addEventListener("run", function (e) {
    if (seen.has(e.lastEventId)) return;
    seen.add(e.lastEventId);
    var change = JSON.parse(e.data);
    if (!runId || change.run_id === runId) {
      if (timer === null) timer = setTimeout(refresh, 250);
    }
  });
  source.onopen = function () { if (note) note.textContent = "Live: connected"; };
  source.onerror = function () { if (note) note.textContent = "Live: reconnecting…"; };
})();
